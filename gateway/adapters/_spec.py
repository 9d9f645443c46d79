"""What the gateway knows of a platform: one ``PlatformSpec`` per platform package.

A platform is its package under ``gateway/adapters/<name>/`` plus one entry in
``gateway.adapters._registry.PLATFORMS``. Its spec names its settings section
(the ``<name>:`` section of config.yaml), the conventional environment
variables that fill it, when it is enabled, how to build its adapter and how
``chorus doctor`` checks it. The SDK is imported by ``build`` and ``describe``
only (``adapter`` and ``describe_bot`` are import paths), so reading the
settings never loads it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from pydantic import BaseModel

from gateway.adapters._base import BaseAdapter
from gateway.events import InboundMessage

S = TypeVar("S", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class PlatformContext:
    """What an adapter is built with besides its own section."""

    vision: bool = False
    """``llm.vision``: fetch images for the model."""


def _always(section: object, msg: InboundMessage) -> bool:
    return True


def load(path: str) -> Any:
    """``package.module:name`` imported on demand."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``exports[name]`` (``module:name``) when asked."""

    def __getattr__(name: str) -> Any:
        if name in exports:
            return load(exports[name])
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


@dataclass(frozen=True)
class PlatformSpec(Generic[S]):
    name: str
    """The platform's name: its settings section, its user keys' prefix (``telegram:…``)."""
    settings: type[S]
    enabled: Callable[[S], bool]
    """Whether the gateway runs this platform (its token is set, typically)."""
    adapter: str
    """``module:Class`` of the adapter, built as ``Class(section, vision=…)``."""
    describe_bot: str
    """``module:function``, ``async (section) -> (ok, what to tell)``, for ``chorus doctor``."""
    enable_hint: str
    """What an operator sets to enable it, for the "no platform is enabled" error."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Conventional variables → key of this section (``TELEGRAM_BOT_TOKEN`` → ``token``)."""
    sdk: tuple[str, ...] = ()
    """Top-level modules only this platform's package may import."""
    streams: Callable[[S, InboundMessage], bool] = _always
    """Whether an answer to ``msg`` streams by edits (where the adapter can edit)."""
    configured: Callable[[S], bool] | None = None
    """Whether the operator set it up at all (default: ``enabled``); ``chorus doctor``
    checks a configured platform, so a half-done set-up is reported, not skipped."""

    def is_configured(self, section: S) -> bool:
        return (self.configured or self.enabled)(section)

    def build(self, section: S, context: PlatformContext) -> BaseAdapter:
        """The adapter, its SDK imported now."""
        return cast(BaseAdapter, load(self.adapter)(section, vision=context.vision))

    def describe(self, section: S) -> Coroutine[Any, Any, tuple[bool, str]]:
        """Ask the platform who the bot is (``chorus doctor``); never shows the token."""
        describe = cast(
            Callable[[S], Coroutine[Any, Any, tuple[bool, str]]], load(self.describe_bot)
        )
        return describe(section)

    def section_of(self, settings: object) -> S:
        """This platform's section of the composed ``Settings``."""
        section = getattr(settings, self.name)
        if not isinstance(section, self.settings):
            raise TypeError(f"settings.{self.name} is not a {self.settings.__name__}")
        return section

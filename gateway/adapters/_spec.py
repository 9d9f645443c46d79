"""What the gateway knows of a platform: one ``PlatformSpec`` per platform package.

A platform is its package under ``gateway/adapters/<name>/`` plus one entry in
``gateway.adapters._registry.PLATFORMS``. Its spec names its settings section
(the ``<name>:`` section of config.yaml), the conventional environment
variables that fill it, when it is enabled, how to build its adapter and how
``chorus doctor`` checks it. The SDK is imported by ``build`` and ``describe``
only, so reading the settings never loads it.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

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


@dataclass(frozen=True)
class PlatformSpec(Generic[S]):
    name: str
    """The platform's name: its settings section, its user keys' prefix (``telegram:…``)."""
    settings: type[S]
    enabled: Callable[[S], bool]
    """Whether the gateway runs this platform (its token is set, typically)."""
    build: Callable[[S, PlatformContext], BaseAdapter]
    describe: Callable[[S], Coroutine[Any, Any, tuple[bool, str]]]
    """For ``chorus doctor``: ask the platform who the bot is; (ok, what to tell)."""
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

    def section_of(self, settings: object) -> S:
        """This platform's section of the composed ``Settings``."""
        section = getattr(settings, self.name)
        if not isinstance(section, self.settings):
            raise TypeError(f"settings.{self.name} is not a {self.settings.__name__}")
        return section

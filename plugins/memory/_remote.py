"""What the remote memory providers share: who they are, and how a tool answers.

Each remote provider (Honcho, Hindsight, OpenViking, RetainDB, Supermemory,
ByteRover, Mem0) names itself, reports whether its client library can be
imported (with the install hint when not), offers its config schema to
``chorus memory setup`` and keeps its settings in config.yaml under
``memory.providers.<name>`` (so :meth:`save_config` writes nothing). Its tools
answer JSON: ``{"success": true, ...}`` or ``{"success": false, "error": ...}``.
"""

from __future__ import annotations

import importlib.util
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol

from memory.providers import MemoryProvider

__all__ = [
    "Dependency",
    "RemoteProvider",
    "findable",
    "http_url",
    "number_in",
    "setting",
    "tool_error",
    "tool_success",
]

logger = logging.getLogger(__name__)


class Dependency(Protocol):
    """A provider's ``_deps`` module: whether its client imports, and what to do if not."""

    UNAVAILABLE_REASON: str

    def installed(self) -> bool: ...


def findable(*modules: str) -> bool:
    """Whether every one of ``modules`` can be imported (found by the import system, not run)."""
    try:
        return all(importlib.util.find_spec(name) is not None for name in modules)
    except (ImportError, ValueError):
        return False


def tool_error(message: str) -> str:
    return json.dumps({"success": False, "error": message}, ensure_ascii=False)


def tool_success(result: Mapping[str, Any]) -> str:
    return json.dumps({"success": True, **result}, ensure_ascii=False)


class RemoteProvider(MemoryProvider):
    """Identity and set-up of a remote provider; subclasses set the three class attributes."""

    provider_name: ClassVar[str]
    dependency: Dependency
    config_schema: ClassVar[Sequence[Mapping[str, Any]]]

    @property
    def name(self) -> str:
        return self.provider_name

    def is_available(self) -> bool:
        return self.dependency.installed()

    @property
    def unavailable_reason(self) -> str | None:
        """Why the provider cannot run here (with the fix), or None when it can."""
        return None if self.is_available() else self.dependency.UNAVAILABLE_REASON

    def get_config_schema(self) -> list[dict[str, Any]]:
        return [dict(field) for field in self.config_schema]


def setting(section: Mapping[str, Any], environ: Mapping[str, str], key: str, var: str) -> Any:
    """``key`` of the provider's config section, else the environment variable ``var``
    (when named); strings stripped, a blank one counts as unset."""
    value = section.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        value = environ.get(var) if var else None
    return value.strip() if isinstance(value, str) else value


def http_url(value: Any, default: str, where: str) -> str:
    """``value`` as an http(s) base URL without its trailing slash; ``default`` (with a
    WARNING naming the setting ``where``) when it is set to something else."""
    url = value or default
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        logger.warning("%s must be an http(s) URL; default", where)
        url = default
    return url.rstrip("/")


def number_in(value: Any, default: float, low: float, high: float, where: str) -> float:
    """``value`` as a number in ``[low, high]``; ``default`` when unset, or (with a
    WARNING naming the setting ``where``) when it is not such a number."""
    if value is None:
        return default
    try:
        number = float(value)
        if isinstance(value, bool) or not low <= number <= high:
            raise ValueError
    except (TypeError, ValueError):
        logger.warning("%s is out of range; default", where)
        return default
    return number

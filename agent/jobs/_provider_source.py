"""Where an agent or a job gets the external memory provider, and how a manager is built.

A :class:`ProviderSource` names the configured provider and knows how to make a
fresh instance of it, what its settings are (``memory.providers.<name>`` with
its secrets, resolved by the gateway layer) and where to record its health.
:func:`build_manager` puts one instance, initialised for one session in one
``agent_context``, into a :class:`~memory.providers.MemoryManager`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.tools.registry import CORE_TOOL_NAMES
from memory.providers import MemoryManager, MemoryProvider, ProviderHealth
from plugins.errors import PluginError

logger = logging.getLogger(__name__)

__all__ = ["ProviderSource", "build_manager"]


def _no_config(provider: MemoryProvider) -> dict[str, Any]:
    return {}


def _no_health() -> ProviderHealth | None:
    return None


@dataclass
class ProviderSource:
    """The configured external provider: ``memory.provider`` and what goes with it."""

    name: str
    load: Callable[[], MemoryProvider]
    """A new, uninitialised instance."""
    config: Callable[[MemoryProvider], dict[str, Any]] = field(default=_no_config)
    """The instance's settings for ``initialize(config=...)``; raises ``PluginError``."""
    health: Callable[[], ProviderHealth | None] = field(default=_no_health)
    """Where this process records starts and failures (``chorus memory status``)."""


def _why(exc: Exception) -> str:
    """What a health record may say: an operator-facing plugin message, else the class."""
    return str(exc) if isinstance(exc, PluginError) else type(exc).__name__


def build_manager(
    source: ProviderSource,
    *,
    session_id: str,
    chorus_home: Path,
    platform: str,
    user_key: str,
    agent_context: str,
    builtin: MemoryProvider | None = None,
    **where: Any,
) -> MemoryManager | None:
    """A MemoryManager with the external provider initialised; None if it cannot load.

    ``where`` (``chat_id``, ``thread_id``, ``is_direct``, ``parent_session_id``)
    goes to ``initialize`` with the rest, and ``config`` with the provider's settings.
    """
    health = source.health()
    on_failure = health.failed if health is not None else None
    manager = MemoryManager(reserved_tool_names=CORE_TOOL_NAMES, on_failure=on_failure)
    if builtin is not None:
        manager.add_provider(builtin)
    try:
        provider = source.load()
        config = source.config(provider)
    except Exception as exc:
        logger.warning("memory provider unavailable, using built-in memory only: %s", exc)
        if health is not None:
            health.failed(source.name, "load", _why(exc))
        return manager if builtin is not None else None
    manager.add_provider(provider)
    manager.initialize_all(
        session_id,
        chorus_home=chorus_home,
        platform=platform,
        user_key=user_key,
        agent_context=agent_context,
        config=config,
        **where,
    )
    if health is not None:
        if manager.external is not None:
            health.started(source.name, agent_context)
        elif not _available(provider):  # an initialize() that raised is recorded already
            health.failed(source.name, "is_available", "not available")
    if manager.external is None and builtin is None:
        return None
    return manager


def _available(provider: MemoryProvider) -> bool:
    try:
        return bool(provider.is_available())
    except Exception:
        return False

"""Which provider owns which tool name: the routing table of the MemoryManager.

Rules, applied in registration order: a name in the reserved set (the core
tools the agent runs itself) is never routed to a provider, and the first
provider to claim a name keeps it. Every refusal is logged once at WARNING.
"""

from __future__ import annotations

import logging
from typing import Any

from memory.providers._provider import MemoryProvider

logger = logging.getLogger(__name__)


class ToolRouter:
    """Tool name → (provider, schema), in the order the tools were accepted."""

    def __init__(self, reserved: frozenset[str]) -> None:
        self._reserved = reserved
        self._routes: dict[str, tuple[MemoryProvider, dict[str, Any]]] = {}
        self._warned: set[tuple[str, str, str]] = set()

    def add(self, provider: MemoryProvider, schemas: list[dict[str, Any]]) -> None:
        """Route the acceptable tools of ``schemas`` to ``provider``."""
        for schema in schemas:
            name = schema.get("name") if isinstance(schema, dict) else None
            if not isinstance(name, str) or not name:
                self._warn(provider, "?", "has no name and is ignored")
            elif name in self._reserved:
                self._warn(provider, name, "shadows a core tool and is ignored")
            elif name in self._routes and self._routes[name][0] is not provider:
                owner = self._routes[name][0].name
                self._warn(provider, name, f"is already provided by {owner!r} and is ignored")
            else:
                self._routes[name] = (provider, schema)

    def drop(self, provider: MemoryProvider) -> None:
        """Forget every tool of ``provider``."""
        self._routes = {n: r for n, r in self._routes.items() if r[0] is not provider}

    def clear(self) -> None:
        """Forget every route (the warnings already logged stay logged)."""
        self._routes = {}

    def owner(self, name: str) -> MemoryProvider | None:
        """The provider that handles ``name``, if any."""
        route = self._routes.get(name)
        return route[0] if route else None

    def schemas(self) -> list[dict[str, Any]]:
        """Routed tools as OpenAI ``tools`` entries."""
        return [{"type": "function", "function": schema} for _, schema in self._routes.values()]

    def _warn(self, provider: MemoryProvider, tool: str, reason: str) -> None:
        key = (provider.name, tool, reason)
        if key not in self._warned:
            self._warned.add(key)
            logger.warning("memory provider %r tool %r %s", provider.name, tool, reason)

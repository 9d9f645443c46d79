"""``chorus doctor``'s lines for the agent's tool servers: each one started, listed and
stopped again, as the gateway would."""

from __future__ import annotations

import asyncio

from agent.tools.mcp import McpTools
from gateway.config import Settings

__all__ = ["tool_server_lines"]


def tool_server_lines(settings: Settings) -> list[tuple[str, bool, str]]:
    """(name, ok, detail) per configured server; a disabled one is said to be."""
    servers = settings.tools.mcp_servers
    if not servers:
        return []
    disabled = [("tools", True, f"{n}: disabled") for n, c in servers.items() if not c.enabled]

    async def probe() -> list[tuple[str, bool, str]]:
        tools = McpTools(servers)
        tools.start()
        longest = max((c.timeout for c in servers.values()), default=1.0)
        try:
            await tools.started(longest + 5)
            return [("tools", h.up, h.line()) for h in tools.health()]
        finally:
            await tools.stop()

    return [*asyncio.run(probe()), *disabled]

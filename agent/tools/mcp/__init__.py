"""The agent's tools from MCP servers (``tools.mcp_servers``), on the official ``mcp`` SDK.

The names are imported on first use, so that reading the settings
(``agent.tools.mcp.settings``) does not load the ``mcp`` SDK.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.tools.mcp._manager import OUTCOMES, STARTUP_WAIT, CallObserver, McpTools
    from agent.tools.mcp._outcomes import ServerHealth
    from agent.tools.mcp._server import McpServer
    from agent.tools.mcp.settings import McpServerSettings

__all__ = [
    "OUTCOMES",
    "STARTUP_WAIT",
    "CallObserver",
    "McpServer",
    "McpServerSettings",
    "McpTools",
    "ServerHealth",
]

_HOME = {
    "OUTCOMES": "agent.tools.mcp._manager",
    "STARTUP_WAIT": "agent.tools.mcp._manager",
    "CallObserver": "agent.tools.mcp._manager",
    "McpTools": "agent.tools.mcp._manager",
    "McpServer": "agent.tools.mcp._server",
    "ServerHealth": "agent.tools.mcp._outcomes",
    "McpServerSettings": "agent.tools.mcp.settings",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_HOME[name]), name)
    globals()[name] = value
    return value

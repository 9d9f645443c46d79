"""The agent's tools from MCP servers (``tools.mcp_servers``), on the official ``mcp`` SDK."""

from agent.tools.mcp._manager import OUTCOMES, STARTUP_WAIT, CallObserver, McpTools
from agent.tools.mcp._server import McpServer, ServerHealth
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

"""The agent's tools as configured: the registry every agent shares, with the MCP servers
of ``tools.mcp_servers`` as one of its sources, counted in the metrics."""

from __future__ import annotations

from agent.tools.mcp import OUTCOMES, McpTools
from agent.tools.registry import ToolRegistry
from gateway.config import Settings
from gateway.logs import register_secret
from gateway.ops import Metrics


def build_tools(
    settings: Settings, metrics: Metrics | None = None
) -> tuple[ToolRegistry, McpTools]:
    """The registry and the MCP servers (not started yet: ``McpTools.start()``).

    Header and environment values of a server are kept out of the logs."""
    servers = settings.tools.mcp_servers
    for conf in servers.values():
        for value in (*conf.headers.values(), *conf.env.values()):
            register_secret(value)
    enabled = [name for name, conf in servers.items() if conf.enabled]
    counted = None
    if metrics is not None and enabled:
        up = lambda: {h.name: h.up for h in mcp.health()}  # noqa: E731
        counted = metrics.for_tools(enabled, OUTCOMES, up).call
    mcp = McpTools(servers, observe=counted)
    registry = ToolRegistry()
    registry.add_source(mcp)
    return registry, mcp

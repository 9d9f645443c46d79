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
    mcp: McpTools  # read by the gauge at scrape time, once built

    def up() -> dict[str, bool]:
        return {health.name: health.up for health in mcp.health()}

    counted = metrics.for_tools(enabled, OUTCOMES, up).call if metrics and enabled else None
    mcp = McpTools(servers, observe=counted)
    return ToolRegistry(sources=[mcp]), mcp

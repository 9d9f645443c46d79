"""The agent's tools as configured: the registry every agent shares, with the MCP servers
of ``tools.mcp_servers`` as one of its sources, counted in the metrics."""

from __future__ import annotations

from collections.abc import Callable

from agent.tools.mcp import OUTCOMES, McpTools
from agent.tools.registry import ToolRegistry
from gateway.config import Settings
from gateway.logs import register_secret
from gateway.ops import Metrics
from memory.secrets import SecretStore


def build_tools(
    settings: Settings,
    metrics: Metrics | None = None,
    *,
    secrets: SecretStore | None = None,
    now: Callable[[], float] | None = None,
) -> tuple[ToolRegistry, McpTools]:
    """The registry and the MCP servers (not started yet: ``McpTools.start()``); a server
    naming ``{person.secret.NAME}`` reads each person's from ``secrets``.

    Header and environment values of a server, and the people's secrets it is given,
    are kept out of the logs."""
    servers = settings.tools.mcp_servers
    for conf in servers.values():
        for value in (*conf.headers.values(), *conf.env.values()):
            register_secret(value)
    enabled = [name for name, conf in servers.items() if conf.enabled]
    mcp: McpTools  # read by the gauge at scrape time, once built

    def up() -> dict[str, bool]:
        return {health.name: health.up for health in mcp.health()}

    counted = metrics.for_tools(enabled, OUTCOMES, up).call if metrics and enabled else None
    mcp = McpTools(
        servers,
        observe=counted,
        secrets=secrets.get if secrets is not None else None,
        reveal=register_secret,
        idle_seconds=settings.tools.idle_seconds,
        **({"now": now} if now is not None else {}),
    )
    return ToolRegistry(sources=[mcp]), mcp

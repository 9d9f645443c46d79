"""The agent's tool servers in the gateway's metrics.

- ``chorus_tool_calls_total{server,outcome}``: calls to an MCP server's tools, by
  how they ended (``agent.tools.mcp.OUTCOMES``); every pair starts at 0;
- ``chorus_tool_server_up{server}``: 1 while the server is connected, else 0
  (read at each scrape).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

__all__ = ["ServersUpSource", "ToolMetrics"]

ServersUpSource = Callable[[], dict[str, bool]]


class _ServersUp(Collector):
    def __init__(self, source: ServersUpSource) -> None:
        self.source = source

    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily(
            "chorus_tool_server_up", "Whether a tool server is connected.", labels=["server"]
        )
        for server, up in sorted(self.source().items()):
            family.add_metric([server], 1.0 if up else 0.0)
        return [family]


class ToolMetrics:
    def __init__(
        self,
        registry: CollectorRegistry,
        servers: Iterable[str],
        outcomes: Iterable[str],
        up: ServersUpSource,
    ) -> None:
        self._calls = Counter(
            "chorus_tool_calls",
            "Calls to a tool server's tools, by outcome.",
            ["server", "outcome"],
            registry=registry,
        )
        kinds = list(outcomes)
        for server in servers:
            for outcome in kinds:
                self._calls.labels(server=server, outcome=outcome)
        registry.register(_ServersUp(up))

    def call(self, server: str, outcome: str) -> None:
        self._calls.labels(server=server, outcome=outcome).inc()

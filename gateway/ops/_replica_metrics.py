"""A replica's metrics, on its gateway's registry (replica mode only).

- ``chorus_replica_mailbox_depth``: entries in this replica's mailbox stream, read
  or not, that it has not finished with (read from Redis at each scrape; left out
  when Redis does not answer within ``DEPTH_TIMEOUT``);
- ``chorus_replica_leases_held``: session leases this replica holds;
- ``chorus_replica_takeovers_total{what}``: ``mailbox`` — mailboxes of dead
  replicas this one claimed; ``lease`` — session leases it took over from a
  replica that stopped;
- ``chorus_replica_handovers_total{what}``: ``message`` — mailbox entries it
  handed on to their session's owner (claimed from a dead replica, or a lease
  lost meanwhile); ``orphan`` — deliveries another replica recorded and never
  routed, routed by this one;
- ``chorus_replica_leases_lost_total``: session leases lost to another replica
  while this one held them (it stalled past them).

Every label value starts at 0.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

__all__ = ["DEPTH_TIMEOUT", "HANDOVERS", "TAKEOVERS", "ReplicaMetrics"]

logger = logging.getLogger(__name__)

DEPTH_TIMEOUT = 2.0
"""Seconds a scrape waits for Redis to count the mailbox."""
TAKEOVERS = ("mailbox", "lease")
HANDOVERS = ("message", "orphan")


class _ReplicaGauges(Collector):
    def __init__(self) -> None:
        self.leases_held: Callable[[], int] | None = None
        self.mailbox_depth: int | None = None

    def collect(self) -> Iterable[Metric]:
        if self.mailbox_depth is not None:
            yield GaugeMetricFamily(
                "chorus_replica_mailbox_depth",
                "Entries in this replica's mailbox it has not finished with.",
                value=self.mailbox_depth,
            )
        if self.leases_held is not None:
            yield GaugeMetricFamily(
                "chorus_replica_leases_held",
                "Session leases this replica holds.",
                value=self.leases_held(),
            )


class ReplicaMetrics:
    """Counted by the replica's ownership and router; gauges read at each scrape."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        registry = registry if registry is not None else CollectorRegistry()
        self._takeovers = Counter(
            "chorus_replica_takeovers",
            "Take-overs from replicas that stopped: mailboxes claimed, session leases.",
            ["what"],
            registry=registry,
        )
        self._handovers = Counter(
            "chorus_replica_handovers",
            "Deliveries handed on to their session's owner: mailbox entries, orphans.",
            ["what"],
            registry=registry,
        )
        self._leases_lost = Counter(
            "chorus_replica_leases_lost",
            "Session leases lost to another replica while held here.",
            registry=registry,
        )
        for what in TAKEOVERS:
            self._takeovers.labels(what=what)
        for what in HANDOVERS:
            self._handovers.labels(what=what)
        self._gauges = _ReplicaGauges()
        registry.register(self._gauges)
        self._depth: Callable[[], Awaitable[int]] | None = None
        self._depth_failing = False

    def set_sources(
        self, *, leases_held: Callable[[], int], mailbox_depth: Callable[[], Awaitable[int]]
    ) -> None:
        self._gauges.leases_held = leases_held
        self._depth = mailbox_depth

    def took_over(self, what: str) -> None:
        """One of ``TAKEOVERS``."""
        self._takeovers.labels(what=what).inc()

    def handed_on(self, what: str) -> None:
        """One of ``HANDOVERS``."""
        self._handovers.labels(what=what).inc()

    def lease_lost(self) -> None:
        self._leases_lost.inc()

    async def refresh(self) -> None:
        """Count the mailbox for the scrape about to be rendered."""
        if self._depth is None:
            return
        try:
            async with asyncio.timeout(DEPTH_TIMEOUT):
                depth: int | None = await self._depth()
        except Exception as exc:
            depth = None
            if not self._depth_failing:
                logger.warning("mailbox depth unavailable (%s); left out", type(exc).__name__)
            self._depth_failing = True
        else:
            if self._depth_failing:
                logger.info("mailbox depth available again")
            self._depth_failing = False
        self._gauges.mailbox_depth = depth

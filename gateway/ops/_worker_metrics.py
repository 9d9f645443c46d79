"""``chorus worker``'s metrics: the jobs it ran, the queue it works, its health.

Besides the process, Python and build series every chorus process exports
(``_registry``):

- ``chorus_worker_jobs_total{kind, outcome}``: jobs run, by job function and
  outcome (``done``, ``retried``, ``failed``); every known kind starts at 0;
- ``chorus_worker_job_seconds{kind}``: how long they ran (a histogram);
- ``chorus_queue_depth`` and ``chorus_failed_jobs``: jobs waiting in Redis and
  jobs failed for good, read at each scrape (left out when Redis cannot tell);
- ``chorus_worker_healthy``: 1 while the worker's loop runs and reaches Redis.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4, Counter, Histogram, generate_latest
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from gateway.ops._registry import process_registry

__all__ = ["JOB_BUCKETS", "WorkerMetrics"]

logger = logging.getLogger(__name__)

JOB_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
"""Histogram buckets (seconds) for one background job."""

DepthSource = Callable[[], tuple[int, int]]
"""Returns (jobs waiting, jobs failed for good)."""


class _WorkerState(Collector):
    def __init__(self, healthy: Callable[[], bool], depth: DepthSource | None) -> None:
        self._healthy = healthy
        self._depth = depth
        self._failing = False

    def collect(self) -> Iterable[Metric]:
        families: list[Metric] = [
            GaugeMetricFamily(
                "chorus_worker_healthy",
                "1 while the worker's loop runs and reaches Redis, else 0.",
                value=1.0 if self._healthy() else 0.0,
            )
        ]
        depth = self._read_depth()
        if depth is not None:
            waiting, failed = depth
            families.append(
                GaugeMetricFamily(
                    "chorus_queue_depth", "Background jobs waiting to run.", value=waiting
                )
            )
            families.append(
                GaugeMetricFamily(
                    "chorus_failed_jobs", "Background jobs that failed.", value=failed
                )
            )
        return families

    def _read_depth(self) -> tuple[int, int] | None:
        if self._depth is None:
            return None
        try:
            depth = self._depth()
        except Exception as exc:
            if not self._failing:
                self._failing = True
                logger.warning("queue depth unavailable (%s); left out", type(exc).__name__)
            return None
        if self._failing:
            self._failing = False
            logger.info("queue depth available again")
        return depth


class WorkerMetrics:
    """One worker's metrics on a registry of its own; ``observe`` is its ``JobObserver``."""

    def __init__(
        self,
        *,
        kinds: Iterable[str],
        outcomes: Iterable[str],
        healthy: Callable[[], bool],
        depth: DepthSource | None = None,
    ) -> None:
        self._registry = process_registry()
        self._jobs = Counter(
            "chorus_worker_jobs",
            "Background jobs run, by kind and outcome (done, retried, failed).",
            ["kind", "outcome"],
            registry=self._registry,
        )
        self._seconds = Histogram(
            "chorus_worker_job_seconds",
            "Time one background job ran.",
            ["kind"],
            buckets=JOB_BUCKETS,
            registry=self._registry,
        )
        outcomes = tuple(outcomes)
        for kind in kinds:
            self._seconds.labels(kind=kind)
            for outcome in outcomes:
                self._jobs.labels(kind=kind, outcome=outcome)
        self._registry.register(_WorkerState(healthy, depth))

    def observe(self, kind: str, outcome: str, seconds: float) -> None:
        self._jobs.labels(kind=kind, outcome=outcome).inc()
        self._seconds.labels(kind=kind).observe(seconds)

    def render(self) -> tuple[bytes, str]:
        """The Prometheus text exposition and its content type."""
        return generate_latest(self._registry), CONTENT_TYPE_PLAIN_0_0_4

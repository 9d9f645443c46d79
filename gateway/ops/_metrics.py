"""Prometheus metrics for the gateway, on a registry of their own.

Counters and histograms are updated by the runner through plain methods
(``message_in``, ``observe_turn`` …). Gauges describing live state — sessions,
the background queue, adapter connectivity — are read from callbacks at scrape
time, so a scrape always reports the state of that moment rather than a value
somebody remembered to set.

A callback that raises never breaks a scrape: its samples are left out and the
failure is logged once until the callback recovers. A source that was never
set is left out the same way, so "unknown" is never reported as zero.

Labelled counters start at 0 for every label value known in advance (platforms
enabled, end reasons, refusals, commands), so ``rate()`` sees their first event.
The registry also holds the process, Python and build-info collectors
(``_registry``); in replica mode, the replica's metrics (``_replica_metrics``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4, Counter, Histogram, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from gateway.ops._registry import process_registry
from gateway.ops._replica_metrics import ReplicaMetrics
from gateway.ops._tool_metrics import ServersUpSource, ToolMetrics

logger = logging.getLogger(__name__)

TOKEN_KINDS = ("prompt", "completion", "cached", "reasoning")
"""The values ``tokens()`` accepts for ``kind``."""

END_REASONS = ("idle", "daily_reset", "new", "admin", "shutdown")
"""Why sessions end; ``chorus_sessions_ended_total`` starts at 0 for each."""

REFUSALS = ("duplicate", "rate_limited", "too_long")
"""Refusals the runner counts whatever the access policy (its own reasons come as they do)."""

TURN_BUCKETS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)
"""Histogram buckets (seconds) for a whole turn and for a single LLM call."""

LiveSessionsSource = Callable[[], int]
QueueStatusSource = Callable[[], tuple[int, int, int]]
"""Returns (queue depth, failed jobs, outbox jobs)."""
AdaptersSource = Callable[[], dict[str, bool]]
"""Returns platform name -> whether its adapter is connected right now."""
AdapterEventsSource = Callable[[], dict[tuple[str, str], int]]
"""Returns (platform, event) -> how often it happened since start (skipped updates, …)."""

_T = TypeVar("_T")


class _LiveStateCollector(Collector):
    """Builds the gauge families from the sources at each scrape."""

    def __init__(self) -> None:
        self.live_sessions: LiveSessionsSource | None = None
        self.queue_status: QueueStatusSource | None = None
        self.adapters: AdaptersSource | None = None
        self.adapter_events: AdapterEventsSource | None = None
        self._failing: set[str] = set()

    def collect(self) -> Iterable[Metric]:
        return list(self._families())

    def _families(self) -> Iterator[Metric]:
        sessions = self._read("live_sessions", self.live_sessions)
        if sessions is not None:
            yield _gauge("chorus_live_sessions", "Sessions currently live.", sessions)
        queue = self._read("queue_status", self.queue_status)
        if queue is not None:
            depth, failed, outbox = queue
            yield _gauge("chorus_queue_depth", "Background jobs waiting to run.", depth)
            yield _gauge("chorus_failed_jobs", "Background jobs that failed.", failed)
            yield _gauge("chorus_outbox_jobs", "Messages waiting in the outbox.", outbox)
        adapters = self._read("adapters", self.adapters)
        if adapters is not None:
            family = GaugeMetricFamily(
                "chorus_adapter_up",
                "1 when the platform adapter is connected right now, else 0.",
                labels=["platform"],
            )
            for platform, up in sorted(adapters.items()):
                family.add_metric([platform], 1.0 if up else 0.0)
            yield family
        events = self._read("adapter_events", self.adapter_events)
        if events is not None:
            counters = CounterMetricFamily(
                "chorus_adapter_events",
                "Events of note in the platform adapters (skipped updates, …).",
                labels=["platform", "event"],
            )
            for (platform, event), count in sorted(events.items()):
                counters.add_metric([platform, event], float(count))
            yield counters

    def _read(self, name: str, source: Callable[[], _T] | None) -> _T | None:
        if source is None:
            return None
        try:
            value = source()
        except Exception:
            if name not in self._failing:
                self._failing.add(name)
                logger.warning(
                    "metrics source %s failed; its gauges are omitted", name, exc_info=True
                )
            return None
        if name in self._failing:
            self._failing.discard(name)
            logger.info("metrics source %s recovered", name)
        return value


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=float(value))


def _totals(counter: Counter) -> Iterator[tuple[dict[str, str], float]]:
    """A counter's ``_total`` samples: (labels, value) for each label set."""
    for family in counter.collect():
        for sample in family.samples:
            if sample.name.endswith("_total"):
                yield sample.labels, sample.value


def _total(counter: Counter) -> float:
    """Sum of a counter's values over all its label sets."""
    return sum(value for _, value in _totals(counter))


class Metrics:
    """The gateway's metrics; each instance has its own registry."""

    def __init__(
        self,
        *,
        live_sessions: LiveSessionsSource | None = None,
        queue_status: QueueStatusSource | None = None,
        adapters: AdaptersSource | None = None,
        platforms: Iterable[str] = (),
    ) -> None:
        """``platforms``: those enabled, whose message counters start at 0."""
        self._registry = process_registry()
        reg = self._registry
        self.replica: ReplicaMetrics | None = None

        self._messages_in = Counter(
            "chorus_messages_in", "Messages received from users.", ["platform"], registry=reg
        )
        self._messages_out = Counter(
            "chorus_messages_out", "Messages sent to users.", ["platform"], registry=reg
        )
        self._llm_errors = Counter("chorus_llm_errors", "Failed LLM calls.", registry=reg)
        self._llm_failovers = Counter(
            "chorus_llm_failovers",
            "LLM calls moved on to another endpoint, by the model they moved to.",
            ["model"],
            registry=reg,
        )
        self._llm_calls = Counter(
            "chorus_llm_calls",
            "LLM calls, by model and outcome (ok, unavailable, refused, over_budget, ...).",
            ["model", "outcome"],
            registry=reg,
        )
        self._sessions_ended = Counter(
            "chorus_sessions_ended", "Sessions ended, by reason.", ["reason"], registry=reg
        )
        self._tokens = Counter("chorus_tokens", "LLM tokens, by kind.", ["kind"], registry=reg)
        for kind in TOKEN_KINDS:
            self._tokens.labels(kind=kind)
        self._commands = Counter(
            "chorus_commands",
            "Slash commands run, by outcome.",
            ["command", "outcome"],
            registry=reg,
        )
        self._rejected = Counter(
            "chorus_rejected_messages",
            "Messages refused before reaching the agent, by reason.",
            ["reason"],
            registry=reg,
        )
        self._turn_seconds = Histogram(
            "chorus_turn_seconds",
            "Time from a user's message to the end of the reply.",
            buckets=TURN_BUCKETS,
            registry=reg,
        )
        self._llm_seconds = Histogram(
            "chorus_llm_seconds", "Duration of one LLM call.", buckets=TURN_BUCKETS, registry=reg
        )
        for platform in platforms:
            self._messages_in.labels(platform=platform)
            self._messages_out.labels(platform=platform)
        for reason in END_REASONS:
            self._sessions_ended.labels(reason=reason)
        for reason in REFUSALS:
            self._rejected.labels(reason=reason)
        self._live = _LiveStateCollector()
        reg.register(self._live)
        self.set_sources(live_sessions=live_sessions, queue_status=queue_status, adapters=adapters)

    # -- live-state sources ------------------------------------------------------------

    def set_sources(
        self,
        *,
        live_sessions: LiveSessionsSource | None = None,
        queue_status: QueueStatusSource | None = None,
        adapters: AdaptersSource | None = None,
        adapter_events: AdapterEventsSource | None = None,
    ) -> None:
        """Set the callbacks read at scrape time; a source passed as None is left as it was."""
        if live_sessions is not None:
            self._live.live_sessions = live_sessions
        if queue_status is not None:
            self._live.queue_status = queue_status
        if adapters is not None:
            self._live.adapters = adapters
        if adapter_events is not None:
            self._live.adapter_events = adapter_events

    def set_replica(self, replica_id: str) -> ReplicaMetrics:
        """Several replicas: every scrape says which one it is (``target_info{replica=…}``)
        and holds the replica's own metrics, returned for its parts to count with."""
        self._registry.set_target_info({"replica": replica_id})
        if self.replica is None:
            self.replica = ReplicaMetrics(self._registry)
        return self.replica

    def for_tools(
        self, servers: Iterable[str], outcomes: Iterable[str], up: ServersUpSource
    ) -> ToolMetrics:
        """The tool servers' metrics (``_tool_metrics``), returned to count calls with."""
        return ToolMetrics(self._registry, servers, outcomes, up)

    def known_commands(self, names: Iterable[str]) -> None:
        """Commands whose ``ok`` count starts at 0."""
        for name in names:
            self._commands.labels(command=name, outcome="ok")

    # -- events ------------------------------------------------------------------------

    def message_in(self, platform: str) -> None:
        self._messages_in.labels(platform=platform).inc()

    def message_out(self, platform: str) -> None:
        self._messages_out.labels(platform=platform).inc()

    def llm_call(self, model: str, outcome: str) -> None:
        self._llm_calls.labels(model=model, outcome=outcome).inc()

    def llm_error(self) -> None:
        self._llm_errors.inc()

    def llm_failover(self, model: str) -> None:
        self._llm_failovers.labels(model=model).inc()

    def session_ended(self, reason: str) -> None:
        self._sessions_ended.labels(reason=reason).inc()

    def tokens(self, kind: str, n: int) -> None:
        """Count ``n`` tokens of ``kind`` (one of TOKEN_KINDS); n must not be negative."""
        if kind not in TOKEN_KINDS:
            raise ValueError(f"unknown token kind {kind!r}; expected one of {TOKEN_KINDS}")
        self._tokens.labels(kind=kind).inc(n)

    def command(self, name: str, outcome: str) -> None:
        self._commands.labels(command=name, outcome=outcome).inc()

    def rejected(self, reason: str) -> None:
        self._rejected.labels(reason=reason).inc()

    def observe_turn(self, seconds: float) -> None:
        self._turn_seconds.observe(seconds)

    def observe_llm(self, seconds: float) -> None:
        self._llm_seconds.observe(seconds)

    # -- reading -----------------------------------------------------------------------

    async def refresh(self) -> None:
        """Read the sources that need I/O (the replica's mailbox) before ``render``."""
        if self.replica is not None:
            await self.replica.refresh()

    def render(self) -> tuple[bytes, str]:
        """The Prometheus text exposition and its content type."""
        return generate_latest(self._registry), CONTENT_TYPE_PLAIN_0_0_4

    def snapshot(self) -> dict[str, float]:
        """Counter totals for ``/admin stats``, summed over labels except token kinds."""
        stats = {
            "messages_in": _total(self._messages_in),
            "messages_out": _total(self._messages_out),
            "llm_errors": _total(self._llm_errors),
            "sessions_ended": _total(self._sessions_ended),
            "commands": _total(self._commands),
            "rejected_messages": _total(self._rejected),
        }
        for labels, value in _totals(self._tokens):
            stats[f"tokens_{labels['kind']}"] = value
        return stats

"""The tracer of a process with ``observability.otlp_endpoint``: the OpenTelemetry SDK,
spans batched off the event loop and sent over OTLP/HTTP.

Imported only when tracing is configured. One trace per turn: ``chorus.turn`` (from the
message's arrival to the answer) with ``chorus.intake`` (arrival → handed to the
session), ``chorus.queue`` (waiting for the session) and whatever the agent does under
it. The person is a keyed hash unless ``include_person_ids``; no text unless
``include_content``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Link, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from agent.tracing._export import quiet_exporter
from agent.tracing._noop import Attr, NoSpan, NoTracer, TurnRef
from agent.tracing._settings import ObservabilitySettings

__all__ = ["OtelTracer"]

logger = logging.getLogger(__name__)

MAX_WAITING = 10_000
"""Turns started at intake and not yet taken up by their session, at most (oldest dropped)."""

MAX_WAIT_NS = 15 * 60 * 10**9
"""A turn not taken up on this process within this long (handed to another replica, or
left for after a restart) is ended here as it is."""

_PROPAGATOR = TraceContextTextMapPropagator()


class OtelSpan(NoSpan):
    """One SDK span with chorus's rules for content and persons."""

    def __init__(self, span: trace.Span, tracer: OtelTracer) -> None:
        self.span = span
        self._tracer = tracer

    def set(self, key: str, value: Attr | None) -> None:
        if value is not None:
            self.span.set_attribute(key, value)

    def content(self, key: str, value: str | None) -> None:
        if value is not None and self._tracer.settings.include_content:
            self.span.set_attribute(key, value)

    def person(self, key: str | None) -> None:
        if key is None:
            return
        if self._tracer.settings.include_person_ids:
            self.span.set_attribute("chorus.person.id", key)
        else:
            self.span.set_attribute("chorus.person", self._tracer.pseudonym(key))

    def fail(self, outcome: str) -> None:
        self.span.set_attribute("chorus.outcome", outcome)
        self.span.set_status(Status(StatusCode.ERROR, outcome))

    def end(self) -> None:
        self.span.end()


class OtelTracer(NoTracer):
    """Spans through the SDK; see the module's docstring."""

    enabled = True

    def __init__(self, settings: ObservabilitySettings, key: bytes) -> None:
        self.settings = settings
        self._key = key
        endpoint = (settings.otlp_endpoint or "").rstrip("/")
        if not endpoint.endswith("/v1/traces"):
            endpoint = f"{endpoint}/v1/traces"
        self.endpoint = endpoint
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": settings.service_name})
        )
        self.provider.add_span_processor(
            BatchSpanProcessor(
                quiet_exporter(endpoint, settings.export_timeout_seconds),
                schedule_delay_millis=1000,
            )
        )
        self.tracer = self.provider.get_tracer("chorus")
        self._waiting: OrderedDict[TurnRef, tuple[trace.Span, int]] = OrderedDict()

    def pseudonym(self, key: str) -> str:
        """The person as a keyed hash: stable on this install, meaningless elsewhere."""
        return hmac.new(self._key, key.encode(), hashlib.sha256).hexdigest()[:32]

    @contextlib.contextmanager
    def span(self, name: str, **attributes: Attr) -> Iterator[OtelSpan]:
        with self.tracer.start_as_current_span(
            name, attributes=attributes, record_exception=False, set_status_on_exception=False
        ) as span:
            wrapped = OtelSpan(span, self)
            try:
                yield wrapped
            except BaseException as exc:
                wrapped.fail(_outcome(exc))
                raise

    def started(self, name: str, **attributes: Attr) -> OtelSpan:
        return OtelSpan(self.tracer.start_span(name, attributes=attributes), self)

    def submitted(self, ref: TurnRef, received_ns: int, person: str, text: str) -> None:
        root = self.tracer.start_span(
            "chorus.turn", context=trace.set_span_in_context(trace.INVALID_SPAN),
            start_time=received_ns, attributes={"chorus.platform": ref[0]},
        )  # fmt: skip
        OtelSpan(root, self).person(person)
        intake = self.tracer.start_span(
            "chorus.intake", context=trace.set_span_in_context(root), start_time=received_ns
        )
        wrapped = OtelSpan(intake, self)
        wrapped.content("chorus.message.text", text)
        if self.settings.include_person_ids:
            intake.set_attribute("chorus.chat.id", ref[1])
        now = time.time_ns()
        intake.end(end_time=now)
        self._waiting[ref] = (root, now)
        while self._waiting and (
            len(self._waiting) > MAX_WAITING
            or next(iter(self._waiting.values()))[1] < now - MAX_WAIT_NS
        ):
            _, (dropped, _) = self._waiting.popitem(last=False)
            dropped.set_attribute("chorus.outcome", "not_taken_up")
            dropped.end()

    @contextlib.contextmanager
    def turn(self, refs: Sequence[TurnRef], session_id: str, person: str) -> Iterator[OtelSpan]:
        found = [self._waiting.pop(ref) for ref in refs if ref in self._waiting]
        if found:
            root, queued_at = found[-1]
        else:  # taken up after a restart, or handed over by another replica
            root, queued_at = self.tracer.start_span("chorus.turn"), time.time_ns()
            OtelSpan(root, self).person(person)
        for other, _ in found[:-1]:  # several messages, one answer: theirs ends here
            other.set_attribute("chorus.answered_with", root.get_span_context().span_id)
            other.end()
        root.set_attribute("chorus.session", session_id)
        root.set_attribute("chorus.messages", max(1, len(refs)))
        context = trace.set_span_in_context(root)
        queue = self.tracer.start_span("chorus.queue", context=context, start_time=queued_at)
        queue.end()
        wrapped = OtelSpan(root, self)
        with trace.use_span(root, end_on_exit=True, record_exception=False,
                            set_status_on_exception=False):  # fmt: skip
            try:
                yield wrapped
            except BaseException as exc:
                wrapped.fail(_outcome(exc))
                raise

    def carrier(self) -> str:
        headers: dict[str, str] = {}
        _PROPAGATOR.inject(headers)
        return headers.get("traceparent", "")

    @contextlib.contextmanager
    def job(self, func: str, session_id: str, parent: str) -> Iterator[None]:
        """A background job's span, linked to the turn that queued it."""
        links = []
        if parent:
            linked = trace.get_current_span(_PROPAGATOR.extract({"traceparent": parent}))
            if linked.get_span_context().is_valid:
                links.append(Link(linked.get_span_context()))
        name = func.rsplit(".", 1)[-1]
        with (
            self.tracer.start_as_current_span(
                f"chorus.job {name}",
                context=trace.set_span_in_context(trace.INVALID_SPAN),
                links=links,
                attributes={"chorus.job": name, "chorus.session": session_id},
                record_exception=False,
                set_status_on_exception=False,
            ) as span,
        ):
            try:
                yield
            except BaseException as exc:
                OtelSpan(span, self).fail(_outcome(exc))
                raise

    def shutdown(self, timeout: float) -> None:
        for root, _ in self._waiting.values():
            root.end()
        self._waiting.clear()
        done = threading.Event()

        def stop() -> None:
            try:
                self.provider.force_flush(int(max(0.1, timeout) * 1000))
                self.provider.shutdown()
            finally:
                done.set()

        worker = threading.Thread(target=stop, name="chorus-trace-flush", daemon=True)
        worker.start()
        if not done.wait(max(0.1, timeout)):
            logger.warning("traces not all sent within %.1fs of shutdown", timeout)


def _outcome(exc: BaseException) -> str:
    return "cancelled" if isinstance(exc, asyncio.CancelledError) else type(exc).__name__

"""Traces of what a turn did, without what anyone said (OpenTelemetry, OTLP/HTTP).

``current()`` is this process's tracer: a ``NoTracer`` (nothing imported, nothing
recorded) until ``install()`` is given settings with ``otlp_endpoint``; then the
SDK's (``agent.tracing._otel``). Code that traces asks ``current()`` each time, so a
process without tracing pays one function call per span.

Span names: ``chorus.turn`` (root), ``chorus.intake``, ``chorus.queue``,
``chorus.recall``, ``chat <model>`` (each LLM call, GenAI semantic conventions),
``execute_tool <name>`` (each tool call), ``chorus.provider <hook>`` and
``chorus.job <name>`` (background jobs, linked to the turn that queued them).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from agent.tracing._noop import NO_SPAN, Attr, NoSpan, NoTracer, TurnRef
from agent.tracing._settings import ObservabilitySettings
from memory.jobs import trace_jobs

if TYPE_CHECKING:
    from agent.tracing._otel import OtelTracer

__all__ = [
    "NO_SPAN",
    "Attr",
    "NoSpan",
    "NoTracer",
    "ObservabilitySettings",
    "TurnRef",
    "current",
    "install",
    "shutdown",
]

logger = logging.getLogger(__name__)

_OFF = NoTracer()
_current: NoTracer | OtelTracer = _OFF


def current() -> NoTracer | OtelTracer:
    """This process's tracer (a ``NoTracer`` unless tracing is installed)."""
    return _current


def install(settings: ObservabilitySettings, key: bytes) -> bool:
    """Start tracing when ``settings.otlp_endpoint`` is set; True when it is on.

    ``key`` keys the hash that stands for a person in the spans (per install).
    Without the SDK installed (the ``otel`` extra), one WARNING and no tracing.
    """
    global _current
    if not settings.otlp_endpoint:
        return False
    try:
        from agent.tracing._otel import OtelTracer
    except ImportError as exc:
        logger.warning(
            "observability.otlp_endpoint is set but the OpenTelemetry SDK is not installed "
            "(%s); install chorus with the otel extra. No traces are sent.",
            exc.name,
        )
        return False
    _current.shutdown(0.1)
    tracer = OtelTracer(settings, key)
    _current = tracer
    trace_jobs(tracer.job)
    logger.info("traces go to %s", tracer.endpoint)
    return True


def shutdown(timeout: float) -> None:
    """Send the spans not yet sent (at most ``timeout`` seconds) and turn tracing off."""
    global _current
    tracer, _current = _current, _OFF
    trace_jobs(None)
    tracer.shutdown(timeout)

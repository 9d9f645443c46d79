"""Where a job's run is traced: the queue layer carries a turn's trace context with the
job (``JobSpec.trace``, a W3C ``traceparent``) and runs each job inside whatever the
process registered with ``trace_jobs`` (the tracer, when tracing is on)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

__all__ = ["JobTracer", "trace_jobs", "traced"]

JobTracer = Callable[[str, str, str], contextlib.AbstractContextManager[Any]]
"""(function path, session id, traceparent) → the context a job runs in."""

_tracer: JobTracer | None = None


def trace_jobs(tracer: JobTracer | None) -> None:
    """Run every job of this process inside ``tracer`` (None: untraced)."""
    global _tracer
    _tracer = tracer


def traced(func: str, session_id: str, trace: str) -> contextlib.AbstractContextManager[Any]:
    """The context one job runs in."""
    tracer = _tracer
    if tracer is None:
        return contextlib.nullcontext()
    return tracer(func, session_id, trace)

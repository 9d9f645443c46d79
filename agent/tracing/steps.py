"""Timestamps of the steps one message goes through, for a benchmark's per-step trace.

Off (the default) ``step()`` is one call and one test of a module global: the
gateway marks each step where it happens — the update read, its inbox record,
the access check, the session, the agent, the request built, the model's first
byte, the answer, its delivery, the settle — and nothing is kept. A benchmark
(``bench/sessions.py``) turns it on with ``watch(sink)``: ``sink`` is then told
each step's name and ``time.perf_counter_ns()`` as it ends. Nothing about a
message but the step's name is passed on.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["STEPS", "StepSink", "step", "watch"]

StepSink = Callable[[str, int], None]
"""Told the name of a step that just ended and ``time.perf_counter_ns()`` then."""

STEPS = (
    "update read",
    "inbox record",
    "access",
    "session",
    "agent",
    "request built",
    "first byte",
    "answer",
    "delivery",
    "settle",
)
"""The steps marked, in the order a message goes through them."""

_sink: StepSink | None = None


def step(name: str) -> None:
    """The step ``name`` of the message being handled ends now (nothing unless watched)."""
    sink = _sink
    if sink is not None:
        sink(name, time.perf_counter_ns())


def watch(sink: StepSink | None) -> None:
    """Tell ``sink`` of every step from now on (None: stop)."""
    global _sink
    _sink = sink

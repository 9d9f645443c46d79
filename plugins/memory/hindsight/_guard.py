"""Hindsight's errors, and the kit's guard named for it (see :mod:`plugins.memory._kit.guard`)."""

from __future__ import annotations

from plugins.memory._breaker import CircuitBreaker
from plugins.memory._kit import BackendFailed, Guard, Paused

__all__ = ["BackendFailed", "HindsightPaused", "make_guard"]


class HindsightPaused(Paused):
    """Hindsight is paused after repeated failures; the message says for how long."""


def make_guard(breaker: CircuitBreaker) -> Guard:
    return Guard("hindsight", breaker, paused=HindsightPaused)

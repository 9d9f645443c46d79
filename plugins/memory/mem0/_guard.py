"""mem0's errors, and the kit's guard named for it (see :mod:`plugins.memory._kit.guard`)."""

from __future__ import annotations

from plugins.memory._breaker import CircuitBreaker
from plugins.memory._kit import BackendFailed, Guard, Paused

__all__ = ["BackendFailed", "Mem0Paused", "make_guard"]


class Mem0Paused(Paused):
    """mem0 is paused after repeated failures; the message says for how long."""


def make_guard(breaker: CircuitBreaker) -> Guard:
    return Guard("mem0", breaker, paused=Mem0Paused)

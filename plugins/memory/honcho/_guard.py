"""Honcho's errors, and the kit's guard named for it (see :mod:`plugins.memory._kit.guard`).

A refusal of one request (400, 404, 409, 422) is the request's problem, not
Honcho's, and leaves the breaker's count alone.
"""

from __future__ import annotations

from plugins.memory._breaker import CircuitBreaker
from plugins.memory._kit import BackendFailed, Guard, Paused

__all__ = ["REQUEST_ERRORS", "HonchoFailed", "HonchoPaused", "make_guard"]

REQUEST_ERRORS = frozenset({400, 404, 409, 422})
"""HTTP statuses that refuse one request and say nothing about Honcho's health."""


class HonchoPaused(Paused):
    """Honcho is paused after repeated failures; the message says for how long."""


class HonchoFailed(BackendFailed):
    """A Honcho call failed; ``cause`` names the exception class and status (never its text)."""


def make_guard(breaker: CircuitBreaker) -> Guard:
    return Guard(
        "honcho",
        breaker,
        label="Honcho",
        paused=HonchoPaused,
        failed=HonchoFailed,
        refused_statuses=REQUEST_ERRORS,
    )

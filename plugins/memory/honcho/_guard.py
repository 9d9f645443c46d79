"""Every call to Honcho goes through :class:`Guard`: the circuit breaker and its log lines.

A failure is logged at WARNING with the operation, the exception class and the
HTTP status only (an error body can quote message text; the full exception is
at DEBUG). Failures that say the backend is unwell (timeouts, refused
connections, 5xx, 429, a refused key) are counted; the ``threshold``-th in a
row pauses Honcho for the cooldown, and the first call after it tries again.
A refusal of one request (400, 404, 409, 422) is the request's problem, not
the backend's, and leaves the count alone. While paused :meth:`Guard.run`
raises :class:`HonchoPaused` without calling the server, so a dead backend
costs a turn no more than a look at the clock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from plugins.errors import PluginError
from plugins.memory._breaker import CircuitBreaker

logger = logging.getLogger(__name__)

T = TypeVar("T")

REQUEST_ERRORS = frozenset({400, 404, 409, 422})
"""HTTP statuses that refuse one request and say nothing about Honcho's health."""


class HonchoPaused(PluginError, RuntimeError):
    """Honcho is paused after repeated failures; the message says for how long."""


class HonchoFailed(PluginError, RuntimeError):
    """A Honcho call failed; ``cause`` names the exception class and status (never its text)."""

    def __init__(self, operation: str, cause: BaseException) -> None:
        self.operation = operation
        self.status = status_of(cause)
        self.cause = describe(cause)
        super().__init__(f"honcho {operation} failed: {self.cause}")


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of a Honcho SDK error (None without one, or for a network error)."""
    status = getattr(exc, "status", None)
    return status if isinstance(status, int) and status > 0 else None


def describe(exc: BaseException) -> str:
    """The class of ``exc`` and its HTTP status, if it has one: never its text."""
    status = status_of(exc)
    return type(exc).__name__ if status is None else f"{type(exc).__name__} {status}"


class Guard:
    def __init__(self, breaker: CircuitBreaker) -> None:
        self.breaker = breaker

    @property
    def paused(self) -> bool:
        return not self.breaker.allow()

    def paused_error(self) -> HonchoPaused:
        seconds = max(1, round(self.breaker.retry_in()))
        return HonchoPaused(
            f"Honcho is paused after {self.breaker.threshold} failures in a row; "
            f"it is tried again in {seconds} s"
        )

    def run(self, operation: str, call: Callable[[], T]) -> T:
        """``call()`` unless paused; a failure is raised as :class:`HonchoFailed`."""
        if self.paused:
            raise self.paused_error()
        try:
            result = call()
        except Exception as exc:
            self._failed(operation, exc)
            raise HonchoFailed(operation, exc) from exc
        if self.breaker.success():
            logger.warning("honcho resumed: %s succeeded after the pause", operation)
        return result

    def _failed(self, operation: str, exc: BaseException) -> None:
        logger.debug("honcho %s failure", operation, exc_info=exc)
        if status_of(exc) in REQUEST_ERRORS:
            logger.warning("honcho %s was refused (%s)", operation, describe(exc))
            return
        if self.breaker.failure():
            logger.warning(
                "honcho %s failed (%s): %d failures in a row, pausing Honcho for %.0f s",
                operation,
                describe(exc),
                self.breaker.failures,
                self.breaker.cooldown,
            )
        else:
            logger.warning(
                "honcho %s failed (%s): %d failure(s) in a row",
                operation,
                describe(exc),
                self.breaker.failures,
            )

"""Every call to Hindsight goes through :class:`Guard`: the circuit breaker and its log lines.

A failure is logged at WARNING with the operation, the exception class and the
HTTP status only (an error body can quote memory text; the full exception is at
DEBUG) and counted; the ``threshold``-th in a row pauses Hindsight for the
cooldown, and the first call after it tries again. While paused
:meth:`Guard.run` raises :class:`HindsightPaused` without calling the server,
so a dead backend costs no more than a check of the clock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from plugins.errors import PluginError
from plugins.memory._breaker import CircuitBreaker

logger = logging.getLogger(__name__)

T = TypeVar("T")


class HindsightPaused(PluginError, RuntimeError):
    """Hindsight is paused after repeated failures; the message says for how long."""


def describe(exc: BaseException) -> str:
    """The class of ``exc`` and its HTTP status, if it has one: never its text."""
    status = getattr(exc, "status", None)
    return f"{type(exc).__name__} {status}" if isinstance(status, int) else type(exc).__name__


class BackendFailed(PluginError, RuntimeError):
    """A Hindsight call failed; ``cause`` is the exception class (and status), never its text."""

    def __init__(self, operation: str, cause: BaseException) -> None:
        self.operation = operation
        self.cause = describe(cause)
        super().__init__(f"hindsight {operation} failed: {self.cause}")


class Guard:
    def __init__(self, breaker: CircuitBreaker) -> None:
        self.breaker = breaker

    @property
    def paused(self) -> bool:
        return not self.breaker.allow()

    def paused_error(self) -> HindsightPaused:
        seconds = max(1, round(self.breaker.retry_in()))
        return HindsightPaused(
            f"Hindsight memory is paused after {self.breaker.threshold} failures in a row; "
            f"it tries again in {seconds} s"
        )

    def run(self, operation: str, call: Callable[[], T]) -> T:
        """``call()`` unless paused; a failure is counted and raised as BackendFailed."""
        if self.paused:
            raise self.paused_error()
        try:
            result = call()
        except Exception as exc:
            self._failed(operation, exc)
            raise BackendFailed(operation, exc) from None
        if self.breaker.success():
            logger.warning("hindsight resumed: %s succeeded after the pause", operation)
        return result

    def _failed(self, operation: str, exc: BaseException) -> None:
        logger.debug("hindsight %s failure", operation, exc_info=exc)
        if self.breaker.failure():
            logger.warning(
                "hindsight %s failed (%s): %d failures in a row, pausing hindsight for %.0f s",
                operation,
                describe(exc),
                self.breaker.failures,
                self.breaker.cooldown,
            )
        else:
            logger.warning(
                "hindsight %s failed (%s): %d failure(s) in a row",
                operation,
                describe(exc),
                self.breaker.failures,
            )

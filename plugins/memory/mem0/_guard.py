"""Every backend call goes through :class:`Guard`: the circuit breaker and its log lines.

A failure is logged at WARNING with the operation and the exception class only
(mem0's errors can quote memory text; the full exception is at DEBUG), and
counted; the fifth in a row pauses mem0 for the cooldown, and the first call
after it tries again. While paused, :meth:`Guard.run` raises
:class:`Mem0Paused` without calling the backend.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from plugins.errors import PluginError
from plugins.memory._breaker import CircuitBreaker

from ._backend import StoreBusy

logger = logging.getLogger(__name__)

T = TypeVar("T")


class Mem0Paused(PluginError, RuntimeError):
    """mem0 is paused after repeated failures; the message says for how long."""


class BackendFailed(PluginError, RuntimeError):
    """A mem0 call failed; ``cause`` is the exception class name (never its text)."""

    def __init__(self, operation: str, cause: BaseException) -> None:
        self.operation = operation
        self.cause = type(cause).__name__
        super().__init__(f"mem0 {operation} failed: {self.cause}")


class Guard:
    def __init__(self, breaker: CircuitBreaker) -> None:
        self.breaker = breaker

    @property
    def paused(self) -> bool:
        return not self.breaker.allow()

    def paused_error(self) -> Mem0Paused:
        seconds = max(1, round(self.breaker.retry_in()))
        return Mem0Paused(
            f"mem0 memory is paused after {self.breaker.threshold} failures in a row; "
            f"it tries again in {seconds} s"
        )

    def run(self, operation: str, call: Callable[[], T], *, count_busy: bool = True) -> T:
        """``call()`` unless paused; a failure is counted and raised as BackendFailed.

        With ``count_busy=False`` a :class:`StoreBusy` is raised as it is and not counted.
        """
        if self.paused:
            raise self.paused_error()
        try:
            result = call()
        except StoreBusy:
            if not count_busy:
                raise
            self._failed(operation, StoreBusy())
            raise BackendFailed(operation, StoreBusy()) from None
        except Exception as exc:
            self._failed(operation, exc)
            raise BackendFailed(operation, exc) from exc
        if self.breaker.success():
            logger.warning("mem0 resumed: %s succeeded after the pause", operation)
        return result

    def _failed(self, operation: str, exc: BaseException) -> None:
        logger.debug("mem0 %s failure", operation, exc_info=exc)
        if self.breaker.failure():
            logger.warning(
                "mem0 %s failed (%s): %d failures in a row, pausing mem0 for %.0f s",
                operation,
                type(exc).__name__,
                self.breaker.failures,
                self.breaker.cooldown,
            )
        else:
            logger.warning(
                "mem0 %s failed (%s): %d failure(s) in a row",
                operation,
                type(exc).__name__,
                self.breaker.failures,
            )

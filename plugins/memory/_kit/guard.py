"""Every backend call of a provider goes through one :class:`Guard`: the breaker and its logs.

A failure that says the backend is unwell (an exception from the call, a
timeout, a refused connection, a 5xx or 429 answer) is logged at WARNING with
the operation and the exception class and HTTP status only (an error body can
quote memory text; the full exception is at DEBUG) and counted on the
:class:`~plugins.memory._breaker.CircuitBreaker`; the ``threshold``-th in a row
pauses the provider for the cooldown, and the first call after it tries again.
A refusal of one request (a :class:`~.errors.Refused`, a permanent
:class:`~.errors.BackendFailed`, or an SDK error whose status is one of
``refused_statuses``) is the request's problem and leaves the count alone.
While paused, :meth:`Guard.run` raises the provider's paused error without
calling the backend, so a dead backend costs a turn no more than a look at
the clock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from typing import TypeVar

from plugins.memory._breaker import CircuitBreaker

from .errors import BackendFailed, Paused, ProviderError, Refused, describe, status_of

__all__ = ["Guard"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class Guard:
    """The breaker of the provider ``name``.

    ``label`` names the backend in the paused message and the pause log line
    (``"Honcho"``; the name by default); ``paused`` and ``failed`` are the
    classes raised (a provider's own subclasses, when code catches them by
    name); ``own`` are the provider's errors a call may raise already
    described: counted (unless permanent) and raised as they are.
    """

    def __init__(
        self,
        name: str,
        breaker: CircuitBreaker,
        *,
        label: str = "",
        paused: type[ProviderError] = Paused,
        failed: type[BackendFailed] = BackendFailed,
        own: tuple[type[BaseException], ...] = (BackendFailed,),
        refused_statuses: Collection[int] = (),
    ) -> None:
        self.name = name
        self.label = label or name
        self.breaker = breaker
        self._paused = paused
        self._failed = failed
        self._own = own
        self._refused = frozenset(refused_statuses)

    @property
    def paused(self) -> bool:
        return not self.breaker.allow()

    def paused_error(self) -> ProviderError:
        seconds = max(1, round(self.breaker.retry_in()))
        return self._paused(
            f"{self.label} is paused after {self.breaker.threshold} failures in a row; "
            f"it tries again in {seconds} s"
        )

    def check(self) -> None:
        """Raise the paused error while the breaker is open."""
        if self.paused:
            raise self.paused_error()

    def failed(
        self, operation: str, cause: str, *, permanent: bool = False, status: int | None = None
    ) -> BackendFailed:
        """The provider's failure error for ``operation`` (to raise), uncounted."""
        return self._failed(
            operation, cause, provider=self.name, permanent=permanent, status=status
        )

    def run(
        self,
        operation: str,
        call: Callable[[], T],
        *,
        uncounted: tuple[type[BaseException], ...] = (),
    ) -> T:
        """``call()`` unless paused; a failure is counted and raised as the failure error.

        An exception of ``uncounted`` is raised as it is and not counted.
        """
        self.check()
        try:
            result = call()
        except uncounted:
            raise
        except Refused:
            raise
        except self._own as exc:
            if not getattr(exc, "permanent", False):
                self.count(operation, getattr(exc, "cause", None) or describe(exc))
            raise
        except Exception as exc:
            logger.debug("%s %s failure", self.name, operation, exc_info=exc)
            cause, status = describe(exc), status_of(exc)
            if status in self._refused:
                logger.warning("%s %s was refused (%s)", self.name, operation, cause)
                raise self.failed(operation, cause, permanent=True, status=status) from None
            self.count(operation, cause)
            raise self.failed(operation, cause, status=status) from None
        self.succeeded(operation)
        return result

    def succeeded(self, operation: str) -> None:
        """Record a success; says so at WARNING when it ends a pause."""
        if self.breaker.success():
            logger.warning("%s resumed: %s succeeded after the pause", self.name, operation)

    def count(self, operation: str, cause: str) -> None:
        """Record a failure of ``operation`` (``cause``: a class or status, never text)."""
        if self.breaker.failure():
            logger.warning(
                "%s %s failed (%s): %d failures in a row, pausing %s for %.0f s",
                self.name,
                operation,
                cause,
                self.breaker.failures,
                self.label,
                self.breaker.cooldown,
            )
        else:
            logger.warning(
                "%s %s failed (%s): %d failure(s) in a row",
                self.name,
                operation,
                cause,
                self.breaker.failures,
            )

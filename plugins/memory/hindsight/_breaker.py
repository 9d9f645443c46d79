"""A circuit breaker: after ``threshold`` failures in a row, pause for ``cooldown`` seconds.

Closed, every call goes through. The ``threshold``-th consecutive failure opens
it: :meth:`CircuitBreaker.allow` says no until ``cooldown`` seconds have
passed on ``clock``; then one call may try again (half-open). A success closes
the breaker; a failure while half-open opens it for another ``cooldown``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

DEFAULT_THRESHOLD = 5
DEFAULT_COOLDOWN = 60.0


class CircuitBreaker:
    def __init__(
        self,
        *,
        threshold: int = DEFAULT_THRESHOLD,
        cooldown: float = DEFAULT_COOLDOWN,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if threshold < 1:
            raise ValueError("threshold must be at least 1")
        if cooldown < 0:
            raise ValueError("cooldown must not be negative")
        self.threshold = threshold
        self.cooldown = cooldown
        self._clock = clock
        self._failures = 0
        self._opened_at: float | None = None
        self._lock = threading.Lock()

    @property
    def failures(self) -> int:
        """Consecutive failures so far."""
        return self._failures

    @property
    def is_open(self) -> bool:
        """Whether calls are paused right now (open and still cooling down)."""
        return self.retry_in() > 0

    def retry_in(self) -> float:
        """Seconds until a call may try again; 0 when calls go through."""
        with self._lock:
            if self._opened_at is None:
                return 0.0
            return max(0.0, self._opened_at + self.cooldown - self._clock())

    def allow(self) -> bool:
        """Whether a call may go to the backend now."""
        return self.retry_in() <= 0

    def success(self) -> bool:
        """Record a success; True when it closed an open breaker."""
        with self._lock:
            was_open = self._opened_at is not None
            self._failures = 0
            self._opened_at = None
            return was_open

    def failure(self) -> bool:
        """Record a failure; True when it (re)opened the breaker."""
        with self._lock:
            self._failures += 1
            if self._failures >= self.threshold:
                self._opened_at = self._clock()
                return True
            return False

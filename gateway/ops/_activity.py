"""Recent activity for `/admin stats`: messages and turns per minute, tokens today."""

from __future__ import annotations

from collections import deque
from datetime import UTC, datetime

from gateway.clock import Clock

WINDOW_SECONDS = 60.0


class Activity:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._messages: deque[float] = deque()
        self._turns: deque[float] = deque()
        self._day = ""
        self._tokens_today = 0

    def message(self) -> None:
        self._messages.append(self._clock.monotonic())

    def turn(self, tokens: int) -> None:
        self._turns.append(self._clock.monotonic())
        day = self._today()
        if day != self._day:
            self._day, self._tokens_today = day, 0
        self._tokens_today += tokens

    def per_minute(self) -> tuple[int, int]:
        """(messages, turns) in the last minute."""
        horizon = self._clock.monotonic() - WINDOW_SECONDS
        for times in (self._messages, self._turns):
            while times and times[0] < horizon:
                times.popleft()
        return len(self._messages), len(self._turns)

    def tokens_today(self) -> int:
        return self._tokens_today if self._day == self._today() else 0

    def _today(self) -> str:
        return datetime.fromtimestamp(self._clock.time(), UTC).strftime("%Y-%m-%d")

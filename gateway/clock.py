"""All time the gateway reads goes through one clock, so tests never sleep for expiry."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def time(self) -> float:
        """Seconds since the epoch (wall clock: deadlines persist across restarts)."""

    def now(self) -> datetime:
        """The current time as an aware UTC datetime."""

    def monotonic(self) -> float:
        """Seconds of a clock that never jumps: for intervals (pacing, throttles), never dates."""

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of the monotonic clock's time (a wall-clock jump does not end it)."""


class SystemClock:
    def time(self) -> float:
        return time.time()

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

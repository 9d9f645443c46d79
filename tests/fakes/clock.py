"""A clock tests move by hand: ``advance()`` wakes every sleeper whose time has come.

``advance()`` is time passing (wall and monotonic alike); ``jump()`` is the wall
clock being set (NTP, a VM resumed, an operator's ``date -s``): the wall time
moves, the monotonic time and every sleep in progress do not notice.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
from datetime import UTC, datetime


class FakeClock:
    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._now = start
        self._offset = 0.0
        """Wall time minus monotonic time: moved by ``jump()`` only."""
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._ids = itertools.count()

    def time(self) -> float:
        return self._now

    def now(self) -> datetime:
        return datetime.fromtimestamp(self._now, UTC)

    def monotonic(self) -> float:
        return self._now - self._offset

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.monotonic() + seconds, next(self._ids), future))
        await future

    async def advance(self, seconds: float) -> None:
        """Move time forward and let everything that was due run."""
        self._now += seconds
        while self._sleepers and self._sleepers[0][0] <= self.monotonic():
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)
        for _ in range(5):
            await asyncio.sleep(0)

    def set(self, timestamp: float) -> None:
        self._now = timestamp

    def jump(self, seconds: float) -> None:
        """The wall clock is set ``seconds`` ahead (or back, when negative); nothing wakes."""
        self._now += seconds
        self._offset += seconds

    @property
    def sleepers(self) -> int:
        return sum(1 for _, _, f in self._sleepers if not f.done())


class JumpClock:
    """Virtual time that jumps: ``sleep(s)`` moves the clock ``s`` ahead and returns at once.

    For code whose waits must be honoured in *its* time (flood blocks, pacing)
    without the test waiting them out: what happened when is read off ``time()``.
    """

    def __init__(self, start: float = 1_000.0) -> None:
        self._now = start
        self.slept: list[float] = []

    def time(self) -> float:
        return self._now

    def now(self) -> datetime:
        return datetime.fromtimestamp(self._now, UTC)

    def monotonic(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self.slept.append(seconds)
            self._now = max(self._now + seconds, math.nextafter(self._now, math.inf))
        await asyncio.sleep(0)

"""When a session expires: idle time and the daily reset hour, in the configured zone."""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from gateway.clock import Clock
from gateway.config import SessionsSettings

logger = logging.getLogger(__name__)

COMPACT_SLACK = 1024
"""Stale heap entries allowed beyond one per session before the heap is rebuilt."""

MAX_NAP = 30.0
"""Longest sleep of the reaper between looks at the wall clock: deadlines are wall-clock
times and a sleep is not, so a clock set forward is noticed within this many seconds."""

IDLE = "idle"
DAILY_RESET = "daily_reset"


def next_reset_after(timestamp: float, hour: int, zone: ZoneInfo) -> float:
    """The first moment strictly after ``timestamp`` when the local clock shows ``hour``:00."""
    local = datetime.fromtimestamp(timestamp, zone)
    candidate = local.replace(hour=hour, minute=0, second=0, microsecond=0)
    if candidate <= local:
        candidate = (candidate + timedelta(days=1)).replace(hour=hour)
    return candidate.timestamp()


def session_deadline(
    started_at: float, last_active: float, settings: SessionsSettings
) -> tuple[float, str]:
    """When a session started at ``started_at`` and last active at ``last_active`` ends, and why."""
    idle_deadline = last_active + settings.idle_minutes * 60
    if settings.daily_reset_hour is None:
        return idle_deadline, IDLE
    reset = next_reset_after(started_at, settings.daily_reset_hour, ZoneInfo(settings.timezone))
    if reset < idle_deadline:
        return reset, DAILY_RESET
    return idle_deadline, IDLE


class Reaper:
    """Calls ``expire(key)`` for keys whose deadline passed; sleeps while nothing is due.

    It looks at the wall clock at least every ``MAX_NAP`` seconds, so a clock set
    forward past deadlines ends those sessions without waiting for a message.

    Entries are (deadline, key); a later ``schedule`` for the same key wins and
    stale heap entries are skipped lazily, so rescheduling is O(log n).
    """

    def __init__(self, clock: Clock, expire: Callable[[str], Awaitable[None]]) -> None:
        self._clock = clock
        self._expire = expire
        self._heap: list[tuple[float, str]] = []
        self._current: dict[str, float] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def schedule(self, key: str, deadline: float) -> None:
        self._current[key] = deadline
        heapq.heappush(self._heap, (deadline, key))
        if len(self._heap) > 2 * len(self._current) + COMPACT_SLACK:
            self._compact()
        self._wake.set()

    def _compact(self) -> None:
        """Drop the stale entries at once: the heap stays in proportion to the sessions,
        however many turns rescheduled them (amortised O(1) per schedule)."""
        self._heap = [(deadline, key) for key, deadline in self._current.items()]
        heapq.heapify(self._heap)

    def cancel(self, key: str) -> None:
        self._current.pop(key, None)

    def __len__(self) -> int:
        return len(self._current)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="session-reaper")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _pop_due(self, now: float) -> list[str]:
        due = []
        while self._heap and self._heap[0][0] <= now:
            deadline, key = heapq.heappop(self._heap)
            if self._current.get(key) == deadline:
                del self._current[key]
                due.append(key)
        return due

    async def run_due(self) -> None:
        for key in self._pop_due(self._clock.time()):
            try:
                await self._expire(key)
            except Exception:
                logger.exception("expiring session %s failed", key)

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            await self.run_due()
            while self._heap and self._current.get(self._heap[0][1]) != self._heap[0][0]:
                heapq.heappop(self._heap)  # drop stale entries
            waiters: list[asyncio.Task[object]] = [asyncio.create_task(self._wake.wait())]
            if self._heap:
                delay = self._heap[0][0] - self._clock.time()
                nap = min(max(0.0, delay), MAX_NAP)
                waiters.append(asyncio.create_task(self._clock.sleep(nap)))
            try:
                await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiter in waiters:
                    waiter.cancel()

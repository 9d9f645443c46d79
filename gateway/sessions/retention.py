"""``sessions.retention_days``: ended sessions older than that are purged, hourly.

Off by default. A purged session's messages go with it, and so do their search
index rows. Sessions still open are never purged, however old. The sweep runs
at start and then every :data:`INTERVAL` seconds, a bounded batch at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from gateway.clock import Clock
from gateway.config import Settings, database_location
from memory.erasure import Sweep

__all__ = ["INTERVAL", "RetentionSweeper"]

logger = logging.getLogger(__name__)

INTERVAL = 3600.0
DAY = 86_400.0
BATCH = 1000


class RetentionSweeper:
    def __init__(self, clock: Clock, settings: Callable[[], Settings]) -> None:
        self._clock = clock
        self._settings = settings
        self._task: asyncio.Task[None] | None = None
        self.rounds = 0
        """Sweeps finished by the hourly loop; it sleeps until the next as soon as this grows."""

    def _purge(self, before: float) -> int:
        removed = 0
        with Sweep(database_location(self._settings())) as sweep:
            while True:
                done = sweep.delete_ended_before(before, BATCH)
                removed += done
                if done < BATCH:
                    return removed

    async def run_once(self) -> int:
        """Purge what is past retention now; how many sessions went."""
        days = self._settings().sessions.retention_days
        if days is None:
            return 0
        try:
            removed = await asyncio.to_thread(self._purge, self._clock.time() - days * DAY)
        except Exception as exc:
            logger.warning("old sessions not purged (%s)", type(exc).__name__)
            return 0
        if removed:
            logger.info("purged %d session(s) ended over %g days ago", removed, days)
        return removed

    async def _run(self) -> None:
        while True:
            await self.run_once()
            self.rounds += 1
            await self._clock.sleep(INTERVAL)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="session-retention")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

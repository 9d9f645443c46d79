"""A burst's turns start a few at a time, in arrival order.

Starting a turn (its recall, the request built and sent) is work on the event loop;
when 200 people write at once, 200 starts interleaved would each reach the model
only after most of the others' work. ``StartGate`` lets ``at_once`` starts run;
a start ends when its first request to the model has left (``agent.sending``), when
the turn ends, or after ``window`` seconds (a recall or a tool that is slow holds
nobody's start for longer), whichever is first. A single message never waits.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from agent import sending

__all__ = ["START_AT_ONCE", "START_WINDOW", "StartGate"]

START_AT_ONCE = 4
"""Turns starting at once."""
START_WINDOW = 0.1
"""Seconds at most one start holds its place (then the next one goes)."""


class StartGate:
    def __init__(self, at_once: int = START_AT_ONCE, window: float = START_WINDOW) -> None:
        self._slots = asyncio.Semaphore(at_once)
        self._window = window

    @asynccontextmanager
    async def start(self, started: asyncio.Event | None = None) -> AsyncIterator[None]:
        """Hold a place while the turn in this block starts (around the whole turn);
        ``started`` is set when the start ends."""
        await self._slots.acquire()
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                timer.cancel()
                self._slots.release()
                if started is not None:
                    started.set()

        timer = asyncio.get_running_loop().call_later(self._window, release)
        try:
            with sending.when_sent(release):
                yield
        finally:
            release()

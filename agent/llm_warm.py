"""A connection to the LLM endpoint opened while a turn is still being prepared.

The first request after a quiet spell would open its connection (TCP, and TLS for
``https``) only once it is built: a few round trips to the endpoint, after the
person's message was already checked, their session found and their agent made.
``Preconnect.warm()`` starts a request of no cost the moment a turn is known to
come (the gateway calls it as it hands a message to its session): ``agent.llm`` asks
the endpoint's base URL through the client, whose answer (404 on OpenAI) leaves its
connection open in the client's pool, where the turn's request finds it, and the
client's own first-request work (it looks up the platform on a worker thread) done.
While requests went out lately (``IDLE_AFTER``) the pool has one already and nothing
is sent. A failure is only logged (DEBUG): the turn's request connects as it would.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

__all__ = ["IDLE_AFTER", "WARM_TIMEOUT", "Preconnect"]

logger = logging.getLogger(__name__)

IDLE_AFTER = 4.0
"""Seconds after the last request from which a connection is opened ahead (the HTTP
client keeps an idle connection for 5 seconds)."""
WARM_TIMEOUT = 10.0
"""Seconds a warming request may take."""


class Preconnect:
    def __init__(self, request: Callable[[], Awaitable[object]], now: Callable[[], float]) -> None:
        """``request``: sends the warming request (an answer of any status is fine)."""
        self._request = request
        self._now = now
        self._used_at: float | None = None
        self._warming: asyncio.Task[None] | None = None
        self.sent = 0
        """Warming requests sent so far."""

    def used(self) -> None:
        """A request to the endpoint goes out now (its connection stays in the pool)."""
        self._used_at = self._now()

    def warm(self) -> None:
        """Open a connection to the endpoint in the background, unless a request went out
        in the last ``IDLE_AFTER`` seconds or a warming one is under way."""
        now = self._now()
        if self._used_at is not None and now - self._used_at < IDLE_AFTER:
            return
        if self._warming is not None and not self._warming.done():
            return
        self._used_at = now
        self.sent += 1
        self._warming = asyncio.get_running_loop().create_task(self._open(), name="llm-warm")

    async def _open(self) -> None:
        try:
            async with asyncio.timeout(WARM_TIMEOUT):
                await self._request()
        except Exception as exc:
            logger.debug("no connection opened ahead to the LLM endpoint (%s)", type(exc).__name__)

    async def settled(self) -> None:
        """Until the warming request under way, if any, has ended."""
        task = self._warming
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)

    async def aclose(self) -> None:
        """Stop a warming request under way (before the HTTP client is closed)."""
        task = self._warming
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

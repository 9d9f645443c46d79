"""What the memory providers recall for a turn: asked with this very message, bounded.

Before a turn the providers' ``prefetch`` gets the user's message. The turn waits
at most ``memory.prefetch_timeout`` seconds; a provider slower than that costs no
more, the turn goes on without its recall, and the answer, when it comes, is
carried into the next turn. While one recall is still running no second one is
started, so a hung provider holds at most one thread.
"""

from __future__ import annotations

import asyncio
import logging

from agent.tracing.spans import provider_span
from memory.providers import MemoryManager, build_memory_context_block

logger = logging.getLogger(__name__)


class Recall:
    """Bounded recall for one session's turns."""

    def __init__(self, memory: MemoryManager, timeout: float) -> None:
        self.memory = memory
        self.timeout = timeout
        self._late: list[str] = []
        self._running: asyncio.Future[str] | None = None

    @property
    def pending(self) -> bool:
        """Whether a recall that missed its turn is still running."""
        return self._running is not None

    def forget(self) -> None:
        """Drop recall carried from a turn that was withdrawn."""
        self._late.clear()

    async def for_turn(self, text: str, *, session_id: str) -> str:
        """The fenced block to append to the user message in this turn's requests; ``""``
        when nothing. Recalled from the session's own memory (``MemoryManager.prefetch``)."""
        with provider_span("prefetch") as span:
            recalled = await self._recall(text, session_id)
            span.set("chorus.recall.found", bool(recalled))
        carried, self._late = self._late, []
        block = build_memory_context_block("\n\n".join(t for t in (*carried, recalled) if t))
        return f"\n\n{block}" if block else ""

    async def _recall(self, text: str, session_id: str) -> str:
        recalled = ""
        if self._running is None:
            task = asyncio.ensure_future(
                asyncio.to_thread(self.memory.prefetch, text, session_id=session_id)
            )
            try:
                recalled = await asyncio.wait_for(asyncio.shield(task), self.timeout)
            except TimeoutError:
                logger.info(
                    "memory recall for session %s took over %.2fs; the turn goes on without it",
                    session_id,
                    self.timeout,
                )
                self._running = task
                task.add_done_callback(self._arrived)
        return recalled

    def _arrived(self, task: asyncio.Future[str]) -> None:
        self._running = None
        if task.cancelled() or task.exception() is not None:
            return
        if task.result():
            self._late.append(task.result())

"""Curating off the caller's thread, for the hooks that run on a live turn.

``on_memory_write`` and ``on_pre_compress`` run in the gateway while a person
waits, and ``brv curate`` asks an LLM, so it can take seconds: those curates
go to one daemon thread per provider instance, in order, each still bounded
by the run timeout (and killed past it). The queue is bounded too: when brv
falls that far behind, a curate is dropped with a WARNING rather than piling
up. :meth:`Curator.close` waits a bounded time for what is queued.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

logger = logging.getLogger(__name__)

MAX_QUEUED = 32


class Curator:
    def __init__(self, curate: Callable[[str, str], None]) -> None:
        self._curate = curate
        self._queue: queue.Queue[tuple[str, str] | None] = queue.Queue(MAX_QUEUED)
        self._thread = threading.Thread(target=self._run, name="brv-curator", daemon=True)
        self._thread.start()

    def submit(self, user_key: str, text: str) -> bool:
        """Queue ``text`` to curate into ``user_key``'s tree; False when the queue is full."""
        try:
            self._queue.put_nowait((user_key, text))
        except queue.Full:
            logger.warning("byterover is behind: a curate was dropped")
            return False
        return True

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                try:
                    self._curate(*item)
                except Exception as exc:  # logged by the guard; never kills the thread
                    logger.debug("byterover background curate failed: %s", type(exc).__name__)
            finally:
                self._queue.task_done()

    def close(self, wait: float) -> None:
        """Stop after what is queued, waiting at most ``wait`` seconds."""
        try:
            self._queue.put(None, timeout=wait)
        except queue.Full:
            return
        self._thread.join(wait)

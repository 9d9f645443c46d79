"""One event loop per job thread, kept from one job to the next, with what lives on it.

Ending a session makes LLM calls (the memory flush, the handoff summary). Each
job starting its own loop built a new OpenAI client each time (its TLS set-up
alone is some 30 ms) and a new async SessionDB: with a thousand sessions ending
at once (the daily reset) that was most of the work. Here a job thread keeps one
``asyncio.Runner``, one ``LLMClient`` (rebuilt only when ``llm`` settings change)
and one ``AsyncSessionDB`` bound to that loop. A forked child starts afresh: a
loop never crosses a fork.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from agent.llm import LLMClient
from agent.settings import LLMSettings
from agent.usage import UsageMeter
from memory.database import Location
from memory.transcripts import AsyncSessionDB

__all__ = ["JobLoop"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

MeterSource = Callable[[], UsageMeter | None]
"""A usage meter for one job thread's loop (the ledger and budgets), or None."""


@dataclass
class _Kept:
    pid: int
    runner: asyncio.Runner
    llm: LLMClient | None = None
    llm_settings: LLMSettings | None = None
    db: AsyncSessionDB | None = None


class JobLoop:
    """``run(work)`` runs ``work(llm, db)`` on this thread's kept loop; thread-safe."""

    def __init__(self, db_path: Location, meters: MeterSource | None = None) -> None:
        self._db_path = db_path
        self._meters = meters
        self._local = threading.local()
        self._all: list[_Kept] = []
        self._lock = threading.Lock()

    def run(
        self,
        settings: LLMSettings,
        work: Callable[[LLMClient, AsyncSessionDB], Coroutine[Any, Any, T]],
    ) -> T:
        kept = self._kept()
        return kept.runner.run(self._call(kept, settings, work))

    async def _call(
        self,
        kept: _Kept,
        settings: LLMSettings,
        work: Callable[[LLMClient, AsyncSessionDB], Coroutine[Any, Any, T]],
    ) -> T:
        if kept.llm is None or kept.llm_settings != settings:
            if kept.llm is not None:
                await _close_llm(kept.llm)  # the settings changed (a reload)
            meter = self._meters() if self._meters is not None else None
            kept.llm, kept.llm_settings = LLMClient(settings, meter=meter), settings
        if kept.db is None:
            kept.db = await AsyncSessionDB.open(self._db_path)
        return await work(kept.llm, kept.db)

    def _kept(self) -> _Kept:
        kept: _Kept | None = getattr(self._local, "kept", None)
        if kept is None or kept.pid != os.getpid():
            kept = _Kept(os.getpid(), asyncio.Runner())
            self._local.kept = kept
            with self._lock:
                self._all.append(kept)
        return kept

    def close(self) -> None:
        """Close every thread's client, database and loop (the threads are idle by now)."""
        with self._lock:
            mine = [k for k in self._all if k.pid == os.getpid()]
            self._all.clear()
        self._local = threading.local()
        if mine:
            # a thread of its own: the caller may be running an event loop (the gateway's)
            closer = threading.Thread(target=_close_all, args=(mine,), name="job-loop-close")
            closer.start()
            closer.join(10)


def _close_all(kept: list[_Kept]) -> None:
    for one in kept:
        try:
            one.runner.run(_close(one))
            one.runner.close()
        except RuntimeError:  # its thread is still running a job (one past the deadline)
            logger.info("a background job is still running; its loop ends with the process")
        except Exception as exc:
            logger.warning("closing a job loop failed (%s)", type(exc).__name__)


async def _close_llm(llm: LLMClient) -> None:
    await llm.aclose()
    closer = getattr(llm.meter, "aclose", None)
    if callable(closer):
        await closer()


async def _close(kept: _Kept) -> None:
    if kept.llm is not None:
        await _close_llm(kept.llm)
    if kept.db is not None:
        await kept.db.aclose()

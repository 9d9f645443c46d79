"""AsyncSessionDB: SessionDB for the event loop.

Every call runs on one dedicated worker thread, so disk I/O never blocks the
loop and calls reach SQLite in the order they were made. A call whose
awaiting task is cancelled still completes on the worker thread; a write is
never half done.

Group commit: the writes that queue up while the thread is busy (a burst of
messages opening sessions and appending to them) run as one batch, in order, in
one transaction — each in its own savepoint, so one failing write fails alone —
and every caller hears back once the batch is committed.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from memory.database import Location
from memory.errors import SessionDBError
from memory.transcripts._db import SessionDB, ToolCalls
from memory.transcripts._records import SearchHit, SessionRecord, StoredMessage

__all__ = ["AsyncSessionDB", "AsyncUserSessions"]

logger = logging.getLogger(__name__)

_P = ParamSpec("_P")
_T = TypeVar("_T")


class AsyncSessionDB:
    """Async front of a ``SessionDB``; the methods mirror the synchronous ones."""

    def __init__(self, db: SessionDB) -> None:
        self._db = db
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="session-db")
        self._closed = False
        self._queue: deque[_Call] = deque()
        self._queue_lock = threading.Lock()
        self._draining = False
        self.batches = 0
        """Transactions of more than one write so far (group commits)."""

    @classmethod
    async def open(cls, path: Location) -> AsyncSessionDB:
        """Open (and create or migrate) the database at ``path`` (a file or a URL) off the loop."""
        return cls(await asyncio.to_thread(SessionDB, path))

    @property
    def db(self) -> SessionDB:
        """The synchronous database underneath, for code that runs outside the loop."""
        return self._db

    async def aclose(self) -> None:
        """Close the database after the calls already submitted, then stop the worker."""
        if self._closed:
            return
        try:
            await self._run(self._db.close)
        finally:
            self._closed = True
            self._executor.shutdown(wait=False)
            logger.debug("async session db closed")

    def for_user(self, user_key: str) -> AsyncUserSessions:
        """An async view limited to the sessions of ``user_key``."""
        return AsyncUserSessions(self, user_key)

    async def create_session(
        self,
        session_id: str,
        *,
        platform: str,
        user_key: str,
        chat_id: str | None = None,
        thread_id: str | None = None,
        user_id: str | None = None,
        model: str | None = None,
        system_prompt: str | None = None,
        parent_session_id: str | None = None,
        started_at: float | None = None,
        is_direct: bool | None = None,
    ) -> None:
        await self._write(
            self._db.create_session,
            session_id,
            platform=platform,
            user_key=user_key,
            chat_id=chat_id,
            thread_id=thread_id,
            user_id=user_id,
            model=model,
            system_prompt=system_prompt,
            parent_session_id=parent_session_id,
            started_at=started_at,
            is_direct=is_direct,
        )

    async def end_session(
        self, session_id: str, reason: str, ended_at: float | None = None
    ) -> bool:
        return await self._write(self._db.end_session, session_id, reason, ended_at)

    async def request_end(self, session_id: str, reason: str) -> bool:
        return await self._write(self._db.request_end, session_id, reason)

    async def append_message(
        self,
        session_id: str,
        role: str,
        content: str | None,
        *,
        tool_call_id: str | None = None,
        tool_calls: ToolCalls | None = None,
        tool_name: str | None = None,
        timestamp: float | None = None,
        token_count: int | None = None,
        finish_reason: str | None = None,
        reasoning: str | None = None,
        speaker: str | None = None,
    ) -> int:
        return await self._write(
            self._db.append_message,
            session_id,
            role,
            content,
            tool_call_id=tool_call_id,
            tool_calls=tool_calls,
            tool_name=tool_name,
            timestamp=timestamp,
            token_count=token_count,
            finish_reason=finish_reason,
            reasoning=reasoning,
            speaker=speaker,
        )

    async def get_messages(self, session_id: str) -> list[StoredMessage]:
        return await self._run(self._db.get_messages, session_id)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        return await self._run(self._db.get_session, session_id)

    async def list_sessions(
        self, *, user_key: str | None = None, active_only: bool = False, limit: int = 50
    ) -> list[SessionRecord]:
        return await self._run(
            self._db.list_sessions, user_key=user_key, active_only=active_only, limit=limit
        )

    async def find_open_sessions(self) -> list[SessionRecord]:
        return await self._run(self._db.find_open_sessions)

    async def open_session_of(
        self, user_key: str, platform: str, chat_id: str | None, thread_id: str | None
    ) -> SessionRecord | None:
        return await self._run(self._db.open_session_of, user_key, platform, chat_id, thread_id)

    async def add_usage(
        self,
        session_id: str,
        *,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        reasoning_tokens: int = 0,
    ) -> None:
        await self._write(
            self._db.add_usage,
            session_id,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_read_tokens=cache_read_tokens,
            cache_write_tokens=cache_write_tokens,
            reasoning_tokens=reasoning_tokens,
        )

    async def set_title(self, session_id: str, title: str | None) -> None:
        await self._write(self._db.set_title, session_id, title)

    async def set_summary(self, session_id: str, summary: str | None) -> None:
        await self._write(self._db.set_summary, session_id, summary)

    async def set_system_prompt(self, session_id: str, prompt: str | None) -> None:
        await self._write(self._db.set_system_prompt, session_id, prompt)

    async def previous_session(
        self, user_key: str, platform: str, chat_id: str | None, thread_id: str | None
    ) -> tuple[str, str] | None:
        return await self._run(self._db.previous_session, user_key, platform, chat_id, thread_id)

    async def latest_summary(
        self, user_key: str, platform: str, chat_id: str | None, thread_id: str | None
    ) -> str | None:
        return await self._run(self._db.latest_summary, user_key, platform, chat_id, thread_id)

    async def search(
        self,
        user_key: str,
        query: str,
        limit: int = 10,
        exclude_session_id: str | None = None,
    ) -> list[SearchHit]:
        return await self._run(self._db.search, user_key, query, limit, exclude_session_id)

    async def _run(self, fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """A read (or anything not to be batched), in its turn."""
        return await self._submit(functools.partial(fn, *args, **kwargs), write=False)

    async def _write(self, fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """A write, in its turn, committed with the writes queued beside it."""
        return await self._submit(functools.partial(fn, *args, **kwargs), write=True)

    async def _submit(self, fn: Callable[[], _T], *, write: bool) -> _T:
        if self._closed:
            raise SessionDBError("session database is closed")
        loop = asyncio.get_running_loop()
        call = _Call(fn, write, loop, loop.create_future())
        with self._queue_lock:
            self._queue.append(call)
            start = not self._draining
            self._draining = True
        if start:
            self._executor.submit(self._drain)
        result: _T = await call.future
        return result

    def _drain(self) -> None:
        """On the worker thread: run what is queued, writes side by side as one batch."""
        while True:
            with self._queue_lock:
                if not self._queue:
                    self._draining = False
                    return
                calls = list(self._queue)
                self._queue.clear()
            start = 0
            while start < len(calls):
                end = start + 1
                if calls[start].write:
                    while end < len(calls) and calls[end].write:
                        end += 1
                self._run_group(calls[start:end])
                start = end

    def _run_group(self, calls: list[_Call]) -> None:
        if len(calls) == 1:
            calls[0].run()
        else:
            try:
                with self._db.batch():
                    for call in calls:
                        call.run()
                self.batches += 1
            except BaseException as exc:  # the commit failed: so did every write in it
                for call in calls:
                    call.failed(exc)
        for call in calls:
            call.report()


@dataclass(slots=True)
class _Call:
    """One call on its way through the worker thread; reported once its batch committed."""

    fn: Callable[[], Any]
    write: bool
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]
    result: Any = None
    error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.fn()
        except BaseException as exc:  # handed to the caller, whatever it is
            self.error = exc

    def failed(self, exc: BaseException) -> None:
        if self.error is None:
            self.error = exc

    def report(self) -> None:
        try:
            self.loop.call_soon_threadsafe(self._resolve)
        except RuntimeError:  # the loop is closed: nobody is waiting any more
            logger.debug("a session db call finished after its event loop closed")

    def _resolve(self) -> None:
        if self.future.done():  # its caller was cancelled; the call itself still ran
            return
        if self.error is not None:
            self.future.set_exception(self.error)
        else:
            self.future.set_result(self.result)


class AsyncUserSessions:
    """The sessions of one user, async: every query is bound to ``user_key``."""

    def __init__(self, db: AsyncSessionDB, user_key: str) -> None:
        if not user_key:
            raise SessionDBError("a per-user view needs a user key")
        self._db = db
        self._user_key = user_key

    @property
    def user_key(self) -> str:
        return self._user_key

    async def search(
        self, query: str, limit: int = 10, exclude_session_id: str | None = None
    ) -> list[SearchHit]:
        return await self._db.search(self._user_key, query, limit, exclude_session_id)

    async def list_sessions(self, limit: int = 50) -> list[SessionRecord]:
        return await self._db.list_sessions(user_key=self._user_key, limit=limit)

"""AsyncSessionDB: SessionDB for the event loop.

Every call runs on one dedicated worker thread, so disk I/O never blocks the
loop and calls reach SQLite in the order they were made. A call whose
awaiting task is cancelled still completes on the worker thread; a write is
never half done.

Group commit: the writes that queue up while the thread is busy (a burst of
messages opening sessions and appending to them) run as one batch, in order, in
one transaction — each in its own savepoint, so one failing write fails alone —
and every caller hears back once the batch is committed.

The async methods are not written out: each is declared as ``read(...)`` or
``write(...)`` of the ``SessionDB`` (or ``UserSessions``) method it runs, and
takes exactly that method's parameters.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from memory.database import Location
from memory.errors import SessionDBError
from memory.transcripts._db import SessionDB, UserSessions
from memory.transcripts._opening import OpenedSession
from memory.transcripts._opening import open_session as _open_session

__all__ = ["AsyncSessionDB", "AsyncUserSessions"]

logger = logging.getLogger(__name__)

_P = ParamSpec("_P")
_T = TypeVar("_T")
_S = TypeVar("_S")
_S_co = TypeVar("_S_co", covariant=True)


class _Offloaded(Generic[_S, _P, _T]):
    """A method of an async front, made from the synchronous method it runs.

    ``read(SessionDB.get_session)`` in the class body of ``AsyncSessionDB``
    gives it ``async get_session(...)`` with the very parameters of
    ``SessionDB.get_session`` (mypy checks every call against them), run on the
    front's worker thread; ``write(...)`` does the same for a write, which is
    committed with the writes queued beside it.
    """

    def __init__(self, method: Callable[Concatenate[_S, _P], _T], *, write: bool) -> None:
        self._method = method
        self._write = write
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, front: None, owner: type[Any]) -> _Offloaded[_S, _P, _T]: ...

    @overload
    def __get__(
        self, front: _Front[_S], owner: type[Any]
    ) -> Callable[_P, Coroutine[Any, Any, _T]]: ...

    def __get__(
        self, front: _Front[_S] | None, owner: type[Any]
    ) -> _Offloaded[_S, _P, _T] | Callable[_P, Coroutine[Any, Any, _T]]:
        if front is None:
            return self
        method, write = self._method, self._write

        async def call(*args: _P.args, **kwargs: _P.kwargs) -> _T:
            target = front._target
            return await front._submit(functools.partial(method, target, *args, **kwargs), write)

        call.__name__ = call.__qualname__ = method.__name__
        call.__doc__ = method.__doc__
        return call


def read(method: Callable[Concatenate[_S, _P], _T]) -> _Offloaded[_S, _P, _T]:
    """The async form of a read: run in its turn on the worker thread."""
    return _Offloaded(method, write=False)


def write(method: Callable[Concatenate[_S, _P], _T]) -> _Offloaded[_S, _P, _T]:
    """The async form of a write: run in its turn, committed with the writes queued beside it."""
    return _Offloaded(method, write=True)


class _Front(ABC, Generic[_S_co]):
    """What an offloaded method runs on: a synchronous target and the worker that runs calls.

    Covariant: a front of ``SessionDB`` runs the methods ``SessionDB`` inherits too."""

    _target: _S_co

    @abstractmethod
    async def _submit(self, fn: Callable[[], _T], write: bool) -> _T:
        """Run ``fn`` on the worker thread in its turn (``write``: as part of a group commit)."""


class AsyncSessionDB(_Front[SessionDB]):
    """Async front of a ``SessionDB``: each method is the synchronous one, off the loop."""

    def __init__(self, db: SessionDB) -> None:
        self._target = db
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
        return self._target

    async def aclose(self) -> None:
        """Close the database after the calls already submitted, then stop the worker."""
        if self._closed:
            return
        try:
            await self._submit(self._target.close, False)
        finally:
            self._closed = True
            self._executor.shutdown(wait=False)
            logger.debug("async session db closed")

    def for_user(self, user_key: str, also: tuple[str, ...] = ()) -> AsyncUserSessions:
        """An async view limited to the sessions of ``user_key`` (and of ``also``)."""
        return AsyncUserSessions(self, user_key, also)

    create_session = write(SessionDB.create_session)
    open_session = write(_open_session)
    end_session = write(SessionDB.end_session)
    request_end = write(SessionDB.request_end)
    append_message = write(SessionDB.append_message)
    take_epoch = write(SessionDB.take_epoch)
    add_usage = write(SessionDB.add_usage)
    set_title = write(SessionDB.set_title)
    set_summary = write(SessionDB.set_summary)
    set_system_prompt = write(SessionDB.set_system_prompt)
    remove_platform_message = write(SessionDB.remove_platform_message)
    edit_platform_message = write(SessionDB.edit_platform_message)

    get_messages = read(SessionDB.get_messages)
    get_session = read(SessionDB.get_session)
    list_sessions = read(SessionDB.list_sessions)
    find_open_sessions = read(SessionDB.find_open_sessions)
    open_session_of = read(SessionDB.open_session_of)
    previous_session = read(SessionDB.previous_session)
    latest_summary = read(SessionDB.latest_summary)
    search = read(SessionDB.search)
    platform_message = read(SessionDB.platform_message)

    def open_session_ahead(
        self, session_id: str, /, *, system_prompt: str | None = None, **fields: Any
    ) -> asyncio.Future[OpenedSession]:
        """``open_session`` queued at once, before any call made after this one, for a
        caller that need not wait for it: its answer (or error) is the future's."""
        opening = functools.partial(
            _open_session, self._target, session_id, system_prompt=system_prompt, **fields
        )
        return self._enqueue(opening, True)

    async def _submit(self, fn: Callable[[], _T], write: bool) -> _T:
        result: _T = await self._enqueue(fn, write)
        return result

    def _enqueue(self, fn: Callable[[], _T], write: bool) -> asyncio.Future[_T]:
        """Queue ``fn`` for the worker thread now; its outcome is the future's."""
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
        return call.future

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
                with self._target.batch():
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


class AsyncUserSessions(_Front[UserSessions]):
    """The sessions of one user, async: every query is bound to ``user_key``."""

    def __init__(self, db: AsyncSessionDB, user_key: str, also: tuple[str, ...] = ()) -> None:
        self._target = db.db.for_user(user_key, also)
        self._db = db

    @property
    def user_key(self) -> str:
        return self._target.user_key

    async def _submit(self, fn: Callable[[], _T], write: bool) -> _T:
        return await self._db._submit(fn, write)

    search = read(UserSessions.search)
    list_sessions = read(UserSessions.list_sessions)

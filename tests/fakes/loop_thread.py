"""The part every fake network service shares: its own event loop in a daemon thread.

A fake defines ``async _serve()`` (bind on 127.0.0.1, remember the port) and
``async _shutdown()``; ``start()``/``stop()`` and the context manager come from
here, so tests use the fakes from sync and async code alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Self

from aiohttp import web

from ..waiting import until


class LoopThread:
    thread_name = "fake-service"

    def __init__(self) -> None:
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    async def _serve(self) -> None:
        raise NotImplementedError

    async def _listen(self, app: web.Application) -> None:
        """Serve ``app`` on a free 127.0.0.1 port (from ``_serve``); sets ``port``."""
        self._runner = web.AppRunner(app, shutdown_timeout=0.5, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.port = int(self._runner.addresses[0][1])

    async def _shutdown(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def start(self) -> Self:
        if self._thread is not None:
            raise RuntimeError(f"{type(self).__name__} already started")
        ready = threading.Event()
        failure: list[BaseException] = []
        loop = asyncio.new_event_loop()
        self._loop = loop

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._serve())
            except BaseException as exc:  # reported to the starting thread
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()

        self._thread = threading.Thread(target=run, name=self.thread_name, daemon=True)
        self._thread.start()
        if not ready.wait(timeout=10):
            raise RuntimeError(f"{type(self).__name__} did not start in time")
        if failure:
            self._thread.join()
            loop.close()
            self._thread = self._loop = None
            raise RuntimeError(f"{type(self).__name__} failed to start") from failure[0]
        return self

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        future = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
        with contextlib.suppress(Exception):
            future.result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        if not thread.is_alive():
            loop.close()
        self._loop = self._thread = None

    async def wait_for(
        self, predicate: Callable[[], bool], timeout: float = 15.0, what: str = "condition"
    ) -> None:
        """Poll ``predicate`` (from the test's loop) until true; fail after ``timeout``."""
        await until(predicate, timeout, what, poll=0.02)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.stop)

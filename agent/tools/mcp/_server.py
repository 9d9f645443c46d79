"""One MCP server, kept connected: started, listed, restarted with backoff, stopped.

``McpServer.start()`` runs a supervisor task that owns the connection (the SDK's
transports and ``ClientSession`` are entered and left in that one task). A stdio
server is a child process of the gateway, in a process group of its own; when
it exits (a crash, a kill) its output ends, the supervisor notices, the call in
flight is told the server stopped, and the server is started again after a
backoff (``BACKOFF_FIRST`` doubling up to ``BACKOFF_MAX``). ``stop()`` closes its
input, waits for it, then terminates its process group: no child outlives the
gateway. A ``notifications/tools/list_changed`` from the server makes the
supervisor list the tools again.

Calls come from any task of the loop: ``call()`` never raises for what the
server does; it raises ``ToolCallFailed`` with a text for the model.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import httpx
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import McpError
from mcp.shared.message import SessionMessage

from agent.tools.mcp._outcomes import ServerHealth, ToolCallFailed
from agent.tools.mcp.settings import McpServerSettings

__all__ = [
    "BACKOFF_FIRST",
    "BACKOFF_MAX",
    "START_TIMEOUT",
    "McpServer",
    "ServerHealth",
    "ToolCallFailed",
]

logger = logging.getLogger(__name__)

BACKOFF_FIRST = 0.5
"""Seconds before the first restart of a server that stopped or failed to start."""
BACKOFF_MAX = 60.0
"""The longest wait between two starts."""
START_TIMEOUT = 60.0
"""Seconds a server may take to start and list its tools (its ``timeout`` if longer)."""
STABLE_SECONDS = 60.0
"""A server up this long before it stopped is restarted after ``BACKOFF_FIRST`` again."""

Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


Relayed = SessionMessage | Exception


def _short(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _short(exc.exceptions[0])
    text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class McpServer:
    """The connection to one configured server."""

    def __init__(
        self,
        name: str,
        settings: McpServerSettings,
        *,
        on_tools_changed: Callable[[], None] = lambda: None,
        errlog: Any = None,
    ) -> None:
        self.name = name
        self.settings = settings
        self.tools: list[types.Tool] = []
        """The tools listed by the server, while it is up."""
        self._on_tools_changed = on_tools_changed
        self._errlog = errlog
        self._session: ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._stopping = False
        self._lost = False
        self._refresh = False
        self._last_error: str | None = None
        self._restarts = 0
        self._tried = asyncio.Event()
        self._gone = asyncio.Event()
        """Set when the current connection ends: the calls in flight on it are answered."""

    @property
    def up(self) -> bool:
        return self._session is not None

    def health(self) -> ServerHealth:
        return ServerHealth(self.name, self.up, len(self.tools), self._last_error, self._restarts)

    async def tried(self) -> None:
        """Returns once the first start has succeeded or failed."""
        await self._tried.wait()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._supervise(), name=f"mcp:{self.name}")

    async def stop(self, timeout: float = 10.0) -> None:
        """Close the connection (a stdio child is ended, its process group with it)."""
        self._stopping = True
        self._wake.set()
        task, self._task = self._task, None
        if task is None:
            return
        if self._session is not None:  # up: close it in order (the child's input first)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(task), timeout)
        if not task.done():  # starting, waiting to start again, or not closing in time
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        session = self._session
        if session is None:
            why = f" (last error: {self._last_error})" if self._last_error else ""
            raise ToolCallFailed(
                "unavailable", f"the tool server {self.name} is not running{why}; try later"
            )
        timeout = self.settings.timeout
        try:
            async with asyncio.timeout(timeout):
                return await self._until_gone(session.call_tool(tool, arguments), self._gone)
        except ToolCallFailed:
            raise
        except TimeoutError:
            raise ToolCallFailed(
                "timeout", f"the tool server {self.name} did not answer within {timeout:g} s"
            ) from None
        except McpError as exc:
            if exc.error.code == types.CONNECTION_CLOSED:
                self._connection_lost("the connection closed during a call")
                raise ToolCallFailed(
                    "unavailable",
                    f"the tool server {self.name} stopped during the call; it is being restarted",
                ) from None
            raise ToolCallFailed(
                "error", f"the tool server {self.name} refused the call: {exc.error.message[:300]}"
            ) from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, httpx.HTTPError) as exc:
            self._connection_lost(_short(exc))
            raise ToolCallFailed(
                "unavailable",
                f"the tool server {self.name} cannot be reached; it is being restarted",
            ) from None
        except Exception as exc:
            logger.warning("mcp server %s: call to %s failed: %s", self.name, tool, _short(exc))
            failed = f"the call to the tool server {self.name} failed"
            raise ToolCallFailed("error", failed) from None

    async def _until_gone(
        self, call: Coroutine[Any, Any, types.CallToolResult], gone: asyncio.Event
    ) -> types.CallToolResult:
        """``call``'s result, unless the connection goes first (a crashed server)."""
        task = asyncio.ensure_future(call)
        waiter = asyncio.ensure_future(gone.wait())
        try:
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if task.done() and not task.cancelled():
            return task.result()
        raise ToolCallFailed(
            "unavailable",
            f"the tool server {self.name} stopped during the call; it is being restarted",
        )

    # -- the supervisor ------------------------------------------------------------------

    def _connection_lost(self, why: str) -> None:
        self._gone.set()
        if not self._lost and not self._stopping:
            self._last_error = why
            self._lost = True
            self._wake.set()

    async def _supervise(self) -> None:
        delay = BACKOFF_FIRST
        while not self._stopping:
            began = time.monotonic()
            try:
                await self._connect_and_serve()
            except Exception as exc:  # the server's failure is its own, never the gateway's
                error = _short(exc)
                again = error == self._last_error  # said once, not at every restart
                self._last_error = error
                level = logging.DEBUG if again else logging.WARNING
                logger.log(level, "mcp server %s failed: %s", self.name, error)
            finally:
                self._tried.set()
                self._gone.set()
                self._session = None
                if self.tools:
                    self.tools = []
                    self._on_tools_changed()
            if self._stopping:
                break
            if time.monotonic() - began >= STABLE_SECONDS:
                delay = BACKOFF_FIRST
            logger.info("mcp server %s: starting again in %.1f s", self.name, delay)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)
            delay = min(delay * 2, BACKOFF_MAX)
            self._restarts += 1

    async def _connect_and_serve(self) -> None:
        self._lost = self._refresh = False
        self._gone = asyncio.Event()
        async with self._transport() as (read, write):
            relay_send, relay_read = anyio.create_memory_object_stream[Relayed](0)
            async with anyio.create_task_group() as group:
                group.start_soon(self._relay, read, relay_send)
                async with ClientSession(
                    relay_read, write, message_handler=self._on_message
                ) as session:
                    with anyio.fail_after(max(self.settings.timeout, START_TIMEOUT)):
                        await session.initialize()
                        await self._list(session)
                    self._session = session
                    self._tried.set()
                    logger.info("mcp server %s up: %d tools", self.name, len(self.tools))
                    await self._serve(session)
                    self._session = None
                group.cancel_scope.cancel()

    async def _serve(self, session: ClientSession) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self._stopping or self._lost:
                if self._lost:
                    logger.warning("mcp server %s stopped: %s", self.name, self._last_error)
                return
            if self._refresh:
                self._refresh = False
                with anyio.fail_after(self.settings.timeout):
                    await self._list(session)
                logger.info("mcp server %s: tools changed, %d now", self.name, len(self.tools))

    async def _list(self, session: ClientSession) -> None:
        tools: list[types.Tool] = []
        cursor: str | None = None
        while True:
            page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
            tools.extend(page.tools)
            cursor = page.nextCursor
            if not cursor:
                break
        self.tools = tools
        self._on_tools_changed()

    async def _relay(
        self,
        read: MemoryObjectReceiveStream[SessionMessage | Exception],
        out: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        """Pass the server's messages on; when they end, the server has gone."""
        async with out:
            async for message in read:
                await out.send(message)
        self._connection_lost("the server exited" if self.settings.command else "stream closed")

    async def _on_message(
        self,
        message: Any,
    ) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ToolListChangedNotification
        ):
            self._refresh = True
            self._wake.set()
        elif isinstance(message, Exception):
            logger.debug("mcp server %s: %s", self.name, _short(message))

    def _transport(self) -> AbstractAsyncContextManager[Streams]:
        settings = self.settings
        if settings.command is not None:
            params = StdioServerParameters(
                command=settings.command, args=settings.args, env=settings.env or None
            )
            return _stdio(params, self._errlog)
        assert settings.url is not None
        return _http(settings.url, settings.headers, settings.timeout)


def _stderr() -> Any:
    """The gateway's own stderr for its children's, when it is a real file."""
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return None
    return sys.stderr


@asynccontextmanager
async def _stdio(params: StdioServerParameters, errlog: Any) -> AsyncIterator[Streams]:
    given = errlog if errlog is not None else _stderr()
    log = given if given is not None else open(os.devnull, "w")  # noqa: SIM115, ASYNC230
    try:
        async with stdio_client(params, errlog=log) as streams:
            yield streams
    finally:
        if given is None:
            log.close()


@asynccontextmanager
async def _http(url: str, headers: dict[str, str], timeout: float) -> AsyncIterator[Streams]:
    client = create_mcp_http_client(
        headers=headers or None, timeout=httpx.Timeout(timeout, read=max(timeout, 300.0))
    )
    async with client, streamable_http_client(url, http_client=client) as (read, write, _):
        yield read, write

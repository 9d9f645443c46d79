"""Telling a turn that its request to the model has left, the moment its body is sent.

A gateway that starts many turns at once (a burst) lets only a few through their
start at a time, in arrival order, so the first ones reach the model without
waiting behind everyone's request building (``gateway.sessions``' start gate); a
start ends when its first request has left. ``when_sent(callback)`` names the
callback for the calls made in the current task (a context variable, so concurrent
turns never see each other's); the LLM client's aiohttp sessions carry
``trace_config()``, which takes the callback of the task making each request and
calls it once the request's last byte (its headers, for a request without a body)
has been written to the connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from types import SimpleNamespace
from typing import Any

import aiohttp

__all__ = ["trace_config", "when_sent"]

_on_sent: ContextVar[Callable[[], None] | None] = ContextVar("chorus_on_sent", default=None)


@contextmanager
def when_sent(callback: Callable[[], None]) -> Iterator[None]:
    """``callback()`` once a request made in this block (this task) has been sent; it may
    be called again for later requests (tool rounds), so make it idempotent."""
    token = _on_sent.set(callback)
    try:
        yield
    finally:
        _on_sent.reset(token)


def trace_config() -> aiohttp.TraceConfig:
    """The trace for an aiohttp session: a request made under ``when_sent`` reports
    itself sent after its body's last chunk (or its headers, when it has no body) went
    out. aiohttp runs these just before it writes what they name, without yielding in
    between, so the callback is called on the loop's next round: after the write."""
    trace = aiohttp.TraceConfig()
    trace.on_request_start.append(_started)
    trace.on_request_headers_sent.append(_headers_sent)
    trace.on_request_chunk_sent.append(_chunk_sent)
    return trace


async def _started(session: Any, context: SimpleNamespace, params: Any) -> None:
    del session, params
    context.sent = _on_sent.get()  # the task that makes the request
    context.left = None
    context.told = False


async def _headers_sent(
    session: Any, context: SimpleNamespace, params: aiohttp.TraceRequestHeadersSentParams
) -> None:
    del session
    if context.sent is None:
        return
    length = params.headers.get("Content-Length")
    if length is not None and length.isdigit():
        context.left = int(length)
        if context.left == 0:
            _tell(context)
    elif "chunked" not in params.headers.get("Transfer-Encoding", "").lower():
        _tell(context)  # no body: the headers are the request


async def _chunk_sent(
    session: Any, context: SimpleNamespace, params: aiohttp.TraceRequestChunkSentParams
) -> None:
    del session
    if context.sent is None:
        return
    if context.left is None:  # a body of unknown length: its first chunk
        _tell(context)
        return
    context.left -= len(params.chunk)
    if context.left <= 0:
        _tell(context)


def _tell(context: SimpleNamespace) -> None:
    """The request's callback, once, on the loop's next round (after the write)."""
    if not context.told:
        context.told = True
        asyncio.get_running_loop().call_soon(context.sent)

"""Telling a turn that its request to the model has left, the moment its body is sent.

A gateway that starts many turns at once (a burst) lets only a few through their
start at a time, in arrival order, so the first ones reach the model without
waiting behind everyone's request building (``gateway.sessions``' start gate); a
start ends when its first request has left. ``when_sent(callback)`` names the
callback for the calls made in the current task (a context variable, so concurrent
turns never see each other's); the LLM client's HTTP client runs ``attach`` on
every request, which asks the HTTP transport to report its steps, and the callback
is called once the request's body is written to the connection.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

__all__ = ["attach", "when_sent"]

SENT_EVENTS = ("http11.send_request_body.complete", "http2.send_request_body.complete")
"""The transport's trace events that mean the whole request is on the connection."""

_on_sent: ContextVar[Callable[[], None] | None] = ContextVar("chorus_on_sent", default=None)


class _Request(Protocol):
    extensions: dict[str, Any]


@contextmanager
def when_sent(callback: Callable[[], None]) -> Iterator[None]:
    """``callback()`` once a request made in this block (this task) has been sent; it may
    be called again for later requests (tool rounds), so make it idempotent."""
    token = _on_sent.set(callback)
    try:
        yield
    finally:
        _on_sent.reset(token)


async def attach(request: _Request) -> None:
    """The HTTP client's request hook: trace the request when somebody waits for it."""
    callback = _on_sent.get()
    if callback is None or "trace" in request.extensions:
        return

    async def trace(event: str, info: dict[str, Any]) -> None:
        del info
        if event in SENT_EVENTS:
            callback()

    request.extensions["trace"] = trace

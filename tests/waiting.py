"""Waiting for something a test observes, with a deadline: a stuck wait fails, it never hangs.

``await until(lambda: server.requests, what="the first LLM request")`` polls the
condition on the test's event loop; ``until_sync`` does the same from a thread
that may block. Both fail with an ``AssertionError`` naming what was awaited.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any

DEFAULT_TIMEOUT = 20.0
_POLL = 0.005


def _describe(condition: Callable[[], object], what: str) -> str:
    if what:
        return what
    try:
        return inspect.getsource(condition).strip()
    except (OSError, TypeError):
        return repr(condition)


async def until(
    condition: Callable[[], object | Awaitable[object]],
    timeout: float = DEFAULT_TIMEOUT,
    what: str = "",
    poll: float = _POLL,
) -> None:
    """Return once ``condition()`` is truthy (or its awaitable is); fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout:g}s waiting for {_describe(condition, what)}"
            )
        await asyncio.sleep(poll)


def until_sync(
    condition: Callable[[], object],
    timeout: float = DEFAULT_TIMEOUT,
    what: str = "",
    poll: float = 0.02,
) -> None:
    """Blocking ``until``: for tests and threads without an event loop."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout:g}s waiting for {_describe(condition, what)}"
            )
        time.sleep(poll)


async def spoken_replies(stack: Any, answers: int) -> None:
    """Wait until the spoken replies of ``answers`` answers of a gateway ``stack`` have been
    made or passed over (``SpokenReplies.outcomes``), and no more than that."""
    outcomes = stack.voice.spoken.outcomes
    await until(lambda: outcomes.total() >= answers, what=f"{answers} spoken replies settled")
    assert outcomes.total() == answers, dict(outcomes)

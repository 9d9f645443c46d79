"""discord.py's and aiohttp's errors, leaving the adapter as ``AdapterError``s.

REST answers become: 429 (or discord.py's own ``RateLimited``) ``RateLimited``
with the wait Discord named, 403 ``ChatForbidden`` (missing access or
permissions, a closed DM), 404 ``MessageNotFound`` (unknown message or
channel), 5xx and connection failures ``PlatformUnreachable``; anything else
Discord refused is a plain ``AdapterError``. The text is Discord's status, code
and message, which never carry the token.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

import aiohttp
import discord

from gateway.adapters._support import Backoff, retrying
from gateway.errors import (
    AdapterError,
    ChatForbidden,
    MessageNotFound,
    PlatformUnreachable,
    RateLimited,
)

logger = logging.getLogger(__name__)

PLATFORM = "discord"
SEND_ATTEMPTS = 3
"""Tries of one send or edit when the connection to Discord drops."""
NETWORK_ERRORS = (aiohttp.ClientConnectionError, asyncio.TimeoutError, ConnectionError)
"""Failures of the connection itself, which a later try may get past."""
_SDK_ERRORS = (discord.HTTPException, discord.RateLimited, aiohttp.ClientError, *NETWORK_ERRORS)


def _retry_after(exc: discord.HTTPException) -> float | None:
    headers = getattr(exc.response, "headers", None) or {}
    try:
        return float(headers["Retry-After"])
    except (KeyError, TypeError, ValueError):
        return None


def adapter_error(exc: BaseException) -> AdapterError:
    """The ``AdapterError`` that stands for ``exc`` (the caller raises it ``from exc``)."""
    if isinstance(exc, discord.RateLimited):
        return RateLimited(PLATFORM, "RateLimited", retry_after=exc.retry_after)
    if isinstance(exc, discord.HTTPException):
        detail = f"{type(exc).__name__}: {exc.status} (code {exc.code}) {exc.text}".rstrip()
        if exc.status == 429:
            return RateLimited(PLATFORM, detail, retry_after=_retry_after(exc))
        if isinstance(exc, discord.Forbidden):
            return ChatForbidden(PLATFORM, detail)
        if isinstance(exc, discord.NotFound):
            return MessageNotFound(PLATFORM, detail)
        if isinstance(exc, discord.DiscordServerError) or exc.status >= 500:
            return PlatformUnreachable(PLATFORM, detail)
        return AdapterError(PLATFORM, detail)
    if isinstance(exc, (aiohttp.ClientError, *NETWORK_ERRORS)):
        return PlatformUnreachable(PLATFORM, type(exc).__name__)
    return AdapterError(PLATFORM, type(exc).__name__)


@contextmanager
def platform_errors() -> Iterator[None]:
    """Run REST calls; Discord's and the connection's errors leave as ``AdapterError``s."""
    try:
        yield
    except (
        discord.HTTPException,
        discord.RateLimited,
        aiohttp.ClientError,
        *NETWORK_ERRORS,
    ) as exc:
        raise adapter_error(exc) from exc


async def retried(
    what: str,
    call: Callable[[], Awaitable[discord.Message]],
    first_delay: float,
    sleep: Callable[[float], Awaitable[None]],
) -> discord.Message:
    """``call`` (a send or an edit), tried again when the connection to Discord drops."""

    def note(exc: BaseException, delay: float) -> None:
        logger.warning("discord: %s failed (%s); trying again", what, type(exc).__name__)

    backoff = Backoff(first=first_delay, factor=2.0, cap=30.0, sleep=sleep)
    return await retrying(
        call, attempts=SEND_ATTEMPTS, retry_on=NETWORK_ERRORS, backoff=backoff, on_retry=note
    )

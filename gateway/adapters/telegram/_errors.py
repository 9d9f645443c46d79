"""python-telegram-bot's errors, leaving the adapter as ``AdapterError``s.

Bot API answers become: 429 ``RateLimited`` (with its ``retry_after``), 403
``ChatForbidden`` (blocked by the person, removed from the group), a "not found"
400 ``MessageNotFound``, a network failure or timeout ``PlatformUnreachable``;
anything else the API refused is a plain ``AdapterError``. The text is the Bot
API's description, which never carries the token.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from telegram.error import BadRequest, Forbidden, NetworkError, RetryAfter, TelegramError

from gateway.adapters.telegram._send import retry_seconds
from gateway.errors import (
    AdapterError,
    ChatForbidden,
    MessageNotFound,
    PlatformUnreachable,
    RateLimited,
)

PLATFORM = "telegram"
_NOT_FOUND = ("not found", "message can't be edited", "message_id_invalid")


def adapter_error(exc: TelegramError) -> AdapterError:
    """The ``AdapterError`` that stands for ``exc`` (the caller raises it ``from exc``)."""
    detail = f"{type(exc).__name__}: {exc.message}"
    if isinstance(exc, RetryAfter):
        return RateLimited(PLATFORM, detail, retry_after=retry_seconds(exc))
    if isinstance(exc, Forbidden):
        return ChatForbidden(PLATFORM, detail)
    if isinstance(exc, BadRequest):  # (before NetworkError: BadRequest is one)
        if any(marker in exc.message.lower() for marker in _NOT_FOUND):
            return MessageNotFound(PLATFORM, detail)
        return AdapterError(PLATFORM, detail)
    if isinstance(exc, NetworkError):
        return PlatformUnreachable(PLATFORM, type(exc).__name__)
    return AdapterError(PLATFORM, detail)


@contextmanager
def platform_errors() -> Iterator[None]:
    """Run Bot API calls; a ``TelegramError`` leaves as an ``AdapterError`` from it."""
    try:
        yield
    except TelegramError as exc:
        raise adapter_error(exc) from exc

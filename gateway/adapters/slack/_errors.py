"""slack_sdk's and aiohttp's errors, leaving the adapter as ``AdapterError``s.

Web API answers become: 429 ``ratelimited`` ``RateLimited`` (with the
``Retry-After`` Slack named), ``not_in_channel``/``is_archived``/``channel_not_found``
(a channel the bot cannot see)/… ``ChatForbidden``,
``message_not_found``/``thread_not_found`` ``MessageNotFound``, 5xx and
connection failures ``PlatformUnreachable``; anything else Slack refused is a
plain ``AdapterError``. The text is Slack's error code, never the token.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from aiohttp import ClientError
from slack_sdk.errors import SlackApiError, SlackClientError

from gateway.adapters.slack._client import error_code
from gateway.errors import (
    AdapterError,
    ChatForbidden,
    MessageNotFound,
    PlatformUnreachable,
    RateLimited,
)

PLATFORM = "slack"
FORBIDDEN = frozenset(
    {
        "not_in_channel",
        "channel_not_found",
        "is_archived",
        "channel_is_archived",
        "restricted_action",
        "restricted_action_read_only_channel",
        "restricted_action_thread_only_channel",
        "restricted_action_non_threadable_channel",
        "cant_update_message",
        "edit_window_closed",
        "access_denied",
        "missing_scope",
        "team_access_not_granted",
        "user_is_restricted",
        "user_not_in_channel",
    }
)
NOT_FOUND = frozenset({"message_not_found", "thread_not_found"})


def _status(exc: SlackApiError) -> int:
    try:
        return int(exc.response.status_code)
    except (AttributeError, TypeError, ValueError):
        return 0


def _retry_after(exc: SlackApiError) -> float | None:
    try:
        headers = {k.lower(): v for k, v in exc.response.headers.items()}
        value = headers["retry-after"]
        return float(value[0] if isinstance(value, list) else value)
    except (AttributeError, KeyError, IndexError, TypeError, ValueError):
        return None


def adapter_error(exc: BaseException) -> AdapterError:
    """The ``AdapterError`` that stands for ``exc`` (the caller raises it ``from exc``)."""
    if isinstance(exc, SlackApiError):
        code, status = error_code(exc), _status(exc)
        if status == 429 or code == "ratelimited":
            return RateLimited(PLATFORM, code, retry_after=_retry_after(exc))
        if code in FORBIDDEN:
            return ChatForbidden(PLATFORM, code)
        if code in NOT_FOUND:
            return MessageNotFound(PLATFORM, code)
        if status >= 500:
            return PlatformUnreachable(PLATFORM, code)
        return AdapterError(PLATFORM, code)
    if isinstance(exc, (ClientError, TimeoutError, OSError)):
        return PlatformUnreachable(PLATFORM, type(exc).__name__)
    return AdapterError(PLATFORM, type(exc).__name__)


@contextmanager
def platform_errors() -> Iterator[None]:
    """Run Web API calls; Slack's and the connection's errors leave as ``AdapterError``s."""
    try:
        yield
    except (SlackClientError, ClientError, TimeoutError, OSError) as exc:
        raise adapter_error(exc) from exc

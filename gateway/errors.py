"""Errors raised by the gateway layer.

Exception tree::

    GatewayError                root of every error this package raises
    ├── ConfigError             configuration cannot be read or is invalid; its text is
    │   │                       safe to show an operator (names keys, never secrets)
    │   └── TokenRejected       a platform rejected the bot's token: that platform cannot
    │                           work until an operator fixes it (the text says what)
    ├── AdapterError            a platform refused or failed a send, edit, typing or
    │   │                       command publication; raised from the SDK's error
    │   ├── RateLimited         the platform asked to wait ``retry_after`` seconds
    │   ├── ChatForbidden       the bot may not write there (blocked, kicked, no rights)
    │   ├── MessageNotFound     the message (or its chat) is gone
    │   ├── FileRefused         a file cannot be sent there: over the platform's size
    │   │                       limit, or the platform takes no files from the bot
    │   └── PlatformUnreachable network failure, timeout or a 5xx: worth a later retry
    ├── GatewayDBError          gateway.access: the gateway's tables cannot be used
    ├── InboxError              gateway.sessions: the durable inbox cannot be used (adapters
    │                           answer a delivery it could not record with 503)
    ├── FencedError             this replica no longer holds the session's lease: the
    │                           turn's sends, edits and writes stop (a newer owner has it)
    ├── ReplicaError            gateway.replicas: the shared Redis failed an operation
    └── BudgetsUnavailable      gateway.budgets: the budgets' counters in Redis cannot be
                                used now (LLM calls go ahead unchecked)

``AdapterError`` carries ``platform``, ``retry_after`` (seconds, when the platform
named a wait) and ``retryable`` (whether the same request later may succeed). Its
text names the platform and the SDK's error class or code, never a token.
"""

from __future__ import annotations

from typing import ClassVar


class GatewayError(Exception):
    """Root of the gateway package's errors."""


class ConfigError(GatewayError):
    """Configuration is missing, unreadable or invalid."""


class TokenRejected(ConfigError):
    """A platform rejected the bot's token (Telegram 401 on ``getMe``, Discord 401 on
    ``/users/@me`` or gateway close 4004, Slack ``invalid_auth``): the text names the
    platform's answer and the variable to fix, never the token."""

    def __init__(self, platform: str, detail: str) -> None:
        super().__init__(detail)
        self.platform = platform


class FencedError(GatewayError):
    """This replica lost the lease of the session a turn belongs to (it stalled past
    ``gateway.lease_seconds``, another replica took the session over): nothing more of
    the turn may reach the chat, the transcript or the inbox."""


class AdapterError(GatewayError):
    """A platform refused or failed an outbound request (send, edit, typing, commands).

    Raised ``from`` the platform SDK's own error, so callers never import an SDK
    to tell a platform failure from a bug.
    """

    default_retryable: ClassVar[bool] = False

    def __init__(
        self,
        platform: str,
        detail: str = "",
        *,
        retry_after: float | None = None,
        retryable: bool | None = None,
    ) -> None:
        super().__init__(f"{platform}: {detail}" if detail else platform)
        self.platform = platform
        self.detail = detail
        self.retry_after = retry_after
        self.retryable = self.default_retryable if retryable is None else retryable


class RateLimited(AdapterError):
    """The platform refused for now and named a wait (``retry_after``) when it could."""

    default_retryable = True


class ChatForbidden(AdapterError):
    """The bot may not write in that chat: blocked by the person, removed, lacks rights."""


class MessageNotFound(AdapterError):
    """The message to edit (or the chat it was in) no longer exists."""


class FileRefused(AdapterError):
    """A file cannot be sent: it is over the platform's size limit (``limit``, bytes), or
    the adapter cannot send files at all (``limit`` 0)."""

    def __init__(self, platform: str, detail: str, *, limit: int = 0) -> None:
        super().__init__(platform, detail)
        self.limit = limit


class PlatformUnreachable(AdapterError):
    """The platform could not be reached or failed on its side (timeout, 5xx)."""

    default_retryable = True


class InboxError(GatewayError):
    """The inbox table (``state.db`` or PostgreSQL) could not be read or written."""

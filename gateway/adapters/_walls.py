"""Chats the bot may not write to: told to the log calmly, once per chat per hour.

A person who blocked the bot (Telegram 403), a channel where the bot lacks a
permission (Discord 50013 Missing Permissions, 50001 Missing Access), one it is
not in or that was archived (Slack ``not_in_channel``, ``channel_not_found``,
``is_archived``) all reach chorus as ``ChatForbidden``. Nothing sent there will
arrive, an apology included, so ``Walls`` logs one WARNING per chat per
``WALL_LOG_INTERVAL`` (the rest at DEBUG) and the caller sends nothing more for
that message.
"""

from __future__ import annotations

import logging

from gateway.adapters._support import SeenSet
from gateway.clock import Clock
from gateway.errors import ChatForbidden

__all__ = ["WALL_LOG_INTERVAL", "Walls", "wall_in"]

logger = logging.getLogger(__name__)

WALL_LOG_INTERVAL = 3600.0
"""Seconds during which a chat the bot may not write to is logged (as a WARNING) once."""
WALLS_REMEMBERED = 10_000
"""Chats remembered at once for that (the oldest are forgotten first)."""


def wall_in(exc: BaseException) -> ChatForbidden | None:
    """The ``ChatForbidden`` that ``exc`` is or was raised from (through the agent, the
    reply stream), or None when the failure is something else."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ChatForbidden):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


class Walls:
    """Where refusals to write in a chat are logged, at most once per chat per interval."""

    def __init__(self, clock: Clock, *, interval: float = WALL_LOG_INTERVAL) -> None:
        self._logged = SeenSet(WALLS_REMEMBERED, ttl=interval, clock=clock)
        self._interval = interval

    def hit(self, platform: str, chat_id: str, exc: ChatForbidden) -> None:
        """The bot may not write in ``chat_id``: one WARNING per chat per interval."""
        if self._logged.add((platform, chat_id)):
            logger.warning(
                "%s: cannot write in chat %s (%s); nothing more is sent there for this "
                "message, and this is logged again after %.0f minutes if it goes on",
                platform,
                chat_id,
                exc.detail or type(exc).__name__,
                self._interval / 60,
            )
        else:
            logger.debug("%s: chat %s still refuses the bot (%s)", platform, chat_id, exc.detail)

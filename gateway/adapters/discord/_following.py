"""Threads the bot follows (``discord.follow_threads``): once it has answered in a
thread, later messages there reach it without a mention, as replies to it do.

The bot knows the threads it posted in since it started; for a thread it does not
know (after a restart), the first message that does not address it has the thread's
last ``LOOKBACK`` messages read (``GET /channels/{thread}/messages``) to see whether
the bot wrote there. Either answer is remembered for a while, so a busy thread is not
read again for every message.
"""

from __future__ import annotations

import logging
from dataclasses import replace

import discord

from gateway.adapters._support import RecentValues
from gateway.clock import Clock
from gateway.events import InboundMessage

__all__ = ["FollowedThreads"]

logger = logging.getLogger(__name__)

LOOKBACK = 50
"""Messages of an unknown thread read to see whether the bot wrote there."""
THREADS_REMEMBERED = 10_000
FOLLOWED_FOR = 7 * 24 * 3600.0
"""Seconds a followed thread is remembered after the bot last wrote or was asked there."""
NOT_FOLLOWED_FOR = 600.0
"""Seconds a thread the bot did not write in is not read again."""


class FollowedThreads:
    """Which threads the bot answered in, and the messages there that count as for it."""

    def __init__(self, enabled: bool, clock: Clock | None = None) -> None:
        self._enabled = enabled
        self._followed: RecentValues[bool] = RecentValues(
            THREADS_REMEMBERED, ttl=FOLLOWED_FOR, clock=clock
        )
        self._not_followed: RecentValues[bool] = RecentValues(
            THREADS_REMEMBERED, ttl=NOT_FOLLOWED_FOR, clock=clock
        )

    def answered(self, thread_id: str) -> None:
        """The bot just posted in ``thread_id``."""
        if self._enabled:
            self._followed.put(thread_id, True)

    async def complete(
        self, message: InboundMessage, source: discord.Message, bot_id: int
    ) -> InboundMessage:
        """``message``, counted as a reply to the bot when it is in a followed thread."""
        thread = message.thread_id
        if not self._enabled or thread is None or message.is_direct:
            return message
        if message.mentions_bot or message.reply_to_bot:
            return message
        if self._followed.get(thread) is None:
            if self._not_followed.get(thread) is not None:
                return message
            if not await self._wrote_in(source, bot_id):
                self._not_followed.put(thread, False)
                return message
        self._followed.put(thread, True)
        logger.debug("discord: message %s in followed thread %s", message.message_id, thread)
        return replace(message, reply_to_bot=True)

    @staticmethod
    async def _wrote_in(source: discord.Message, bot_id: int) -> bool:
        channel = source.channel
        if not isinstance(channel, discord.Thread):
            return False
        try:
            async for earlier in channel.history(limit=LOOKBACK, before=source):
                if earlier.author.id == bot_id:
                    return True
        except (discord.HTTPException, OSError, TimeoutError) as exc:
            logger.warning("discord: reading a thread's history failed (%s)", type(exc).__name__)
        return False

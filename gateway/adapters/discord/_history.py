"""What a thread already said, for the first message chorus sees in it.

When someone mentions the bot in a thread it has not seen since it started,
the message carries the thread's last ``CONTEXT_MESSAGES`` messages before it
(``GET /channels/{thread}/messages?before=…``) as others' words (``quoted``),
with people's names, so the agent knows what "this" refers to. A failed read
leaves the message as it is.
"""

from __future__ import annotations

import logging
from dataclasses import replace

import discord

from gateway.adapters._support import SeenSet
from gateway.adapters.discord._events import mention_pattern
from gateway.events import InboundMessage, Quoted

logger = logging.getLogger(__name__)

CONTEXT_MESSAGES = 20
MAX_CONTEXT_CHARS = 1000
"""Characters of one earlier message quoted as thread context."""
THREADS_REMEMBERED = 10_000


def quote(earlier: list[discord.Message], bot_id: int, bot_name: str) -> tuple[Quoted, ...]:
    """``earlier`` (oldest first) as others' words; empty messages are left out."""
    mention = mention_pattern(bot_id)
    quoted: list[Quoted] = []
    for message in earlier:
        text = mention.sub(f"@{bot_name} ", message.content).strip()
        if not text:
            continue
        if len(text) > MAX_CONTEXT_CHARS:
            text = text[:MAX_CONTEXT_CHARS] + "…"
        name = bot_name if message.author.id == bot_id else message.author.display_name
        quoted.append(Quoted("thread", name, text))
    return tuple(quoted)


class ThreadContext:
    """Adds a thread's earlier messages to the first addressed message seen in it."""

    def __init__(self, limit: int = CONTEXT_MESSAGES) -> None:
        self._limit = limit
        self._seen = SeenSet(THREADS_REMEMBERED)

    def saw(self, thread_id: str) -> None:
        """The bot is already part of this thread (it just posted there)."""
        self._seen.add(thread_id)

    async def complete(
        self, message: InboundMessage, source: discord.Message, me: discord.ClientUser
    ) -> InboundMessage:
        thread = message.thread_id
        addressed = message.mentions_bot or message.reply_to_bot
        if thread is None or not addressed or not self._seen.add(thread):
            return message
        channel = source.channel
        if not isinstance(channel, discord.Thread):
            return message
        try:
            earlier = [m async for m in channel.history(limit=self._limit, before=source)]
        except (discord.HTTPException, OSError, TimeoutError) as exc:
            logger.warning("discord: reading a thread's history failed (%s)", type(exc).__name__)
            return message
        earlier.reverse()  # Discord answers newest first
        context = quote(earlier, me.id, me.display_name)
        return replace(message, quoted=context) if context else message

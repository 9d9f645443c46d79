"""The message context menu "Ask chorus": a person asks the bot about any message.

Discord offers it on a message (Apps → Ask chorus). The interaction carries the
target message; it reaches the runner as that person asking about it, in their own
session of the channel (or thread, or DM), with the message as the replied-to
context (``gateway.adapters._replied``: someone else's words fenced as others'
content, the person's own as plain context). Discord shows "chorus is thinking…"
at once (a deferred response); the answer fills that response in and is edited
there while it streams. A long answer goes on in the channel, as any other.

A message without text (only a file, a sticker) is answered to the asker alone with
why nothing was asked. Interaction tokens last 15 minutes: an answer that is not
ready by then goes into the channel instead.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import discord
from discord import app_commands

from gateway.adapters._replied import Writer, with_replied
from gateway.adapters._support import RecentValues
from gateway.adapters.discord._errors import platform_errors
from gateway.adapters.discord._events import PLATFORM
from gateway.events import InboundMessage, OutboundMessage, SentMessage

__all__ = ["ASK_MENU", "AskedInteractions", "ask_message"]

logger = logging.getLogger(__name__)

ASK_MENU = "Ask chorus"
ASK_TEXT = "What can you tell me about this message?"
NOTHING_TO_ASK = "That message has no text I can read, so there is nothing to ask about."
TOKEN_LIFETIME = 14 * 60.0
"""Seconds an interaction's token is used for its answer (Discord's last 15 minutes)."""
REMEMBERED = 10_000

Deliver = Callable[[InboundMessage], Awaitable[None]]


def ask_message(
    interaction: discord.Interaction[Any], target: discord.Message, bot_id: int
) -> InboundMessage | None:
    """The ask as a message from the person who asked; None when ``target`` has no text."""
    if not target.content.strip():
        return None
    channel = interaction.channel
    channel_id = interaction.channel_id or target.channel.id
    direct = interaction.guild_id is None
    asker = interaction.user
    inbound = InboundMessage(
        platform=PLATFORM,
        chat_id=str(channel_id),
        user_id=str(asker.id),
        text=ASK_TEXT,
        message_id=str(interaction.id),
        user_name=asker.display_name,
        thread_id=str(channel_id) if isinstance(channel, discord.Thread) else None,
        is_direct=direct,
        mentions_bot=not direct,
    )
    # the bot's own words are others' words here: not in the asker's conversation yet
    writer: Writer = "sender" if target.author.id == asker.id else "other"
    name = target.author.display_name if target.author.id != bot_id else "chorus"
    return with_replied(inbound, writer, name, target.content)


class AskedInteractions:
    """Asks waiting for their answer, and the responses that show one."""

    def __init__(self, deliver: Deliver) -> None:
        self._deliver = deliver
        self._waiting: RecentValues[discord.Interaction[Any] | None] = RecentValues(
            REMEMBERED, ttl=TOKEN_LIFETIME
        )
        """By the ask's message id, and by chat for asks in a DM (answered unreplied)."""
        self._shown: RecentValues[discord.Interaction[Any]] = RecentValues(
            REMEMBERED, ttl=TOKEN_LIFETIME
        )
        """Interactions by the id of the response message that shows their answer."""

    def menu(self) -> app_commands.ContextMenu:
        return app_commands.ContextMenu(name=ASK_MENU, callback=self.ask)

    async def ask(self, interaction: discord.Interaction[Any], target: discord.Message) -> None:
        me = interaction.client.user
        inbound = ask_message(interaction, target, me.id if me is not None else 0)
        if inbound is None:
            logger.info("discord: an ask about message %s without text", target.id)
            await interaction.response.send_message(NOTHING_TO_ASK, ephemeral=True)
            return
        await interaction.response.defer(thinking=True)
        self._waiting.put(("ask", inbound.message_id), interaction)
        if inbound.is_direct:
            self._waiting.put(("dm", inbound.chat_id), interaction)
        logger.debug("discord: ask %s in %s", inbound.message_id, inbound.chat_id)
        await self._deliver(inbound)

    def _take(self, message: OutboundMessage) -> discord.Interaction[Any] | None:
        keys = [("ask", message.reply_to_message_id)] if message.reply_to_message_id else []
        if not keys:
            keys = [("dm", message.chat_id)]
        for key in keys:
            interaction = self._waiting.get(key)
            if interaction is not None:
                self._waiting.put(key, None)
                self._waiting.put(("ask", str(interaction.id)), None)
                self._waiting.put(("dm", str(interaction.channel_id)), None)
                return interaction
        return None

    async def send(self, message: OutboundMessage) -> SentMessage | None:
        """``message`` as the response to the ask it answers; None when it answers none."""
        interaction = self._take(message)
        if interaction is None:
            return None
        with platform_errors():
            shown = await interaction.edit_original_response(content=message.text)
        self._shown.put(str(shown.id), interaction)
        return SentMessage(message.chat_id, str(shown.id), message.thread_id)

    async def edit(self, sent: SentMessage, text: str) -> bool:
        """Edit the response ``sent`` is; False when it is no ask's response."""
        interaction = self._shown.get(sent.message_id)
        if interaction is None:
            return False
        with platform_errors():
            await interaction.edit_original_response(content=text)
        return True

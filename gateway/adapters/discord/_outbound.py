"""Discord's outbound half: messages, edits, buttons, direct messages, files, typing.

Sends go through ``POST /channels/{id}/messages`` (the first part of a reply in a
guild channel references the message it answers) and ``PATCH`` for streamed edits.
A dropped connection is retried a bounded number of times with the same ``nonce``
(``enforce_nonce``), so Discord keeps one message even when the first attempt arrived.
"""

from __future__ import annotations

import io
import logging
import secrets
from collections.abc import Sequence

import discord

from gateway.adapters._base import BaseAdapter
from gateway.adapters._delivery import send_text
from gateway.adapters.discord._ask import AskedInteractions
from gateway.adapters.discord._buttons import ChoiceView
from gateway.adapters.discord._client import ChorusClient
from gateway.adapters.discord._errors import platform_errors, retried
from gateway.adapters.discord._following import FollowedThreads
from gateway.adapters.discord._history import ThreadContext
from gateway.adapters.discord._permissions import PermissionReport
from gateway.clock import Clock
from gateway.errors import AdapterError, ChatForbidden
from gateway.events import InboundMessage, OutboundMessage, SentMessage

logger = logging.getLogger(__name__)

VOICE_FILENAME = "answer.ogg"


class DiscordOutbound(BaseAdapter):
    """What ``DiscordAdapter`` sends; its ``__init__`` sets the state declared here."""

    _client: ChorusClient | None
    _asks: AskedInteractions
    _following: FollowedThreads
    _threads: ThreadContext
    _report: PermissionReport
    _retry_delay: float
    _clock: Clock

    def _channel(self, chat_id: str) -> discord.PartialMessageable:
        if self._client is None:
            raise RuntimeError("discord adapter is not started")
        return self._client.get_partial_messageable(int(chat_id))

    async def send(self, message: OutboundMessage) -> SentMessage:
        if (asked := await self._asks.send(message)) is not None:  # "Ask chorus"'s answer
            if message.thread_id:
                self._following.answered(message.thread_id)
            return asked
        channel = self._channel(message.chat_id)
        reference = None
        if message.reply_to_message_id:
            reference = discord.MessageReference(
                message_id=int(message.reply_to_message_id),
                channel_id=channel.id,
                fail_if_not_exists=False,
            )
        nonce = str(secrets.randbelow(10**18))

        async def attempt() -> discord.Message:
            if reference is None:
                return await channel.send(message.text, nonce=nonce)
            return await channel.send(message.text, reference=reference, nonce=nonce)

        watch = self._report.watching(message.chat_id, reply=reference is not None)
        with watch, platform_errors():
            sent = await retried("send", attempt, self._retry_delay, self._clock.sleep)
        if message.thread_id:
            self._threads.saw(message.thread_id)
            self._following.answered(message.thread_id)
        return SentMessage(message.chat_id, str(sent.id), message.thread_id)

    async def send_choice(
        self, message: OutboundMessage, choices: Sequence[tuple[str, str]]
    ) -> SentMessage:
        """The text with buttons; a press runs as its command (``_buttons.ChoiceView``)."""
        channel = self._channel(message.chat_id)
        with self._report.watching(message.chat_id), platform_errors():
            if choices:
                sent = await channel.send(message.text, view=ChoiceView(choices))
            else:
                sent = await channel.send(message.text)
        return SentMessage(message.chat_id, str(sent.id), message.thread_id)

    async def send_choice_privately(
        self, user_id: str, text: str, choices: Sequence[tuple[str, str]]
    ) -> SentMessage:
        """In a DM with the person (opened as ``send_private`` opens it), with buttons."""
        if self._client is None:
            raise RuntimeError("discord adapter is not started")
        if not user_id.isdigit():
            raise ChatForbidden(self.name, "not a Discord user id")
        with platform_errors():
            dm = await self._client.http.start_private_message(int(user_id))
        return await self.send_choice(OutboundMessage(self.name, str(dm["id"]), text), choices)

    async def close_choice(self, sent: SentMessage, text: str) -> None:
        partial = self._channel(sent.chat_id).get_partial_message(int(sent.message_id))
        with platform_errors():
            await partial.edit(content=text, view=None)  # the buttons go

    async def send_private(self, msg: InboundMessage, text: str) -> bool:
        """In a DM with the sender (``POST /users/@me/channels``, then the messages): a typed
        message cannot get an ephemeral answer. Someone who takes no DMs from the server's
        members is a 403 (50007, ``ChatForbidden``)."""
        if self._client is None:
            raise RuntimeError("discord adapter is not started")
        with platform_errors():
            dm = await self._client.http.start_private_message(int(msg.user_id))
        out = OutboundMessage(platform=self.name, chat_id=str(dm["id"]), text=text)
        await send_text(self, out)
        return False

    async def send_file(self, chat_id: str, filename: str, data: bytes, caption: str) -> None:
        """A message with the file attached (a multipart message create)."""
        self.check_file_size(data)
        channel = self._channel(chat_id)
        with self._report.watching(chat_id, files=True), platform_errors():
            await channel.send(caption or None, file=discord.File(io.BytesIO(data), filename))

    async def send_voice(
        self,
        chat_id: str,
        audio: bytes,
        *,
        thread_id: str | None = None,
        reply_to: str | None = None,
    ) -> None:
        """An OGG/Opus audio attachment (played in place) in the answer's channel or thread."""
        del thread_id, reply_to  # a thread is a channel of its own
        await self.send_file(chat_id, VOICE_FILENAME, audio, "")

    async def edit(self, sent: SentMessage, text: str) -> None:
        if await self._asks.edit(sent, text):
            return
        partial = self._channel(sent.chat_id).get_partial_message(int(sent.message_id))

        async def attempt() -> discord.Message:
            return await partial.edit(content=text)

        with platform_errors():
            await retried("edit", attempt, self._retry_delay, self._clock.sleep)

    async def typing(self, chat_id: str, thread_id: str | None = None) -> None:
        try:
            with platform_errors():
                await self._channel(chat_id).typing()
        except AdapterError as exc:
            logger.debug("discord: typing in %s failed (%s)", chat_id, type(exc).__name__)

"""Telegram's outbound half: messages, edits, inline keyboards, private chats, files,
spoken replies, typing, each through ``TelegramSender`` in the chat's turn and budget."""

from __future__ import annotations

from collections.abc import Sequence

from telegram import InputFile

from gateway.adapters._base import BaseAdapter
from gateway.adapters._delivery import send_text
from gateway.adapters.telegram._bot import Application_
from gateway.adapters.telegram._buttons import close_keyboard, keyboard
from gateway.adapters.telegram._errors import platform_errors
from gateway.adapters.telegram._pacing import ChatPacer
from gateway.adapters.telegram._send import TelegramSender
from gateway.adapters.telegram._updates import BotIdentity
from gateway.errors import ChatForbidden
from gateway.events import InboundMessage, OutboundMessage, SentMessage

START_PAYLOAD = "private"
"""The deep link's ``/start`` payload for someone the bot may not write to first."""


class TelegramOutbound(BaseAdapter):
    """What ``TelegramAdapter`` sends; its ``__init__`` sets the state declared here."""

    _app: Application_
    _pacer: ChatPacer
    _sender: TelegramSender
    _me: BotIdentity | None

    async def send(self, message: OutboundMessage) -> SentMessage:
        with platform_errors():
            sent = await self._sender.send(
                message.chat_id,
                message.text,
                thread_id=message.thread_id,
                reply_to=message.reply_to_message_id,
                spare=message.to_stranger,
            )
        return SentMessage(str(sent.chat.id), str(sent.message_id), message.thread_id)

    async def send_choice(
        self, message: OutboundMessage, choices: Sequence[tuple[str, str]]
    ) -> SentMessage:
        """Plain text (nothing in it is read as markup) with an inline keyboard."""
        thread = int(message.thread_id) if message.thread_id else None
        with platform_errors():
            sent = await self._app.bot.send_message(
                chat_id=int(message.chat_id),
                text=message.text,
                message_thread_id=thread,
                reply_markup=keyboard(choices) if choices else None,
            )
        return SentMessage(str(sent.chat.id), str(sent.message_id), message.thread_id)

    async def send_choice_privately(
        self, user_id: str, text: str, choices: Sequence[tuple[str, str]]
    ) -> SentMessage:
        """A person's private chat with the bot has their id."""
        if not user_id.isdigit():
            raise ChatForbidden(self.name, "no private chat with this person")
        return await self.send_choice(OutboundMessage(self.name, user_id, text), choices)

    async def close_choice(self, sent: SentMessage, text: str) -> None:
        with platform_errors():
            await self._sender.request(close_keyboard(self._app.bot, sent, text))

    async def send_private(self, msg: InboundMessage, text: str) -> bool:
        """Into the sender's private chat (its id is theirs). Telegram answers 403 "bot
        can't initiate conversation" until they have started the bot (``ChatForbidden``)."""
        if not msg.user_id.isdigit():  # a person's id; a group's is negative
            raise ChatForbidden(self.name, "no private chat with this sender")
        out = OutboundMessage(platform=self.name, chat_id=msg.user_id, text=text)
        await send_text(self, out)
        return False

    def private_chat_link(self) -> str | None:
        if self._me is None or not self._me.username:
            return None
        return f"https://t.me/{self._me.username}?start={START_PAYLOAD}"

    async def edit(self, sent: SentMessage, text: str) -> None:
        with platform_errors():
            await self._sender.edit(sent.chat_id, sent.message_id, text)

    async def send_file(self, chat_id: str, filename: str, data: bytes, caption: str) -> None:
        """``sendDocument`` (a multipart upload), in the chat's turn and budget."""
        self.check_file_size(data)
        document = InputFile(data, filename=filename)
        async with self._pacer.turn(chat_id):
            await self._pacer.acquire(chat_id)
            with platform_errors():
                await self._sender.request(
                    self._app.bot.send_document(
                        int(chat_id), document, caption=caption or None, filename=filename
                    )
                )

    async def send_voice(
        self,
        chat_id: str,
        audio: bytes,
        *,
        thread_id: str | None = None,
        reply_to: str | None = None,
    ) -> None:
        """``sendVoice`` (a multipart upload), in the chat's turn and budget."""
        self.check_file_size(audio)
        async with self._pacer.turn(chat_id):
            await self._pacer.acquire(chat_id)
            with platform_errors():
                await self._sender.voice(chat_id, audio, thread_id=thread_id, reply_to=reply_to)

    async def delete_message(self, chat_id: str, message_id: str) -> bool:
        """``deleteMessage``: a bot may delete what a person sent it in a private chat."""
        with platform_errors():
            await self._app.bot.delete_message(chat_id=int(chat_id), message_id=int(message_id))
        return True

    async def typing(self, chat_id: str, thread_id: str | None = None) -> None:
        with platform_errors():
            await self._sender.typing(chat_id, thread_id)

    async def ready(self, chat_id: str) -> None:
        await self._sender.ready(chat_id)

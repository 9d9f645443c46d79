"""Slack's outbound half: ``chat.postMessage`` in the message's thread, ``chat.update``
for streamed edits, buttons, ephemeral answers, files and spoken replies.

429s are waited out and retried; a failure leaves as an ``AdapterError`` (``_errors``).
Chorus's own words (``/help``, notices) are spelled as Slack's slash command takes them.
"""

from __future__ import annotations

from collections.abc import Sequence

from slack_sdk.web.async_client import AsyncWebClient

from gateway.adapters._base import BaseAdapter, CommandInfo
from gateway.adapters.slack._actions import choice_blocks, close_card
from gateway.adapters.slack._busy import BusyIndicator
from gateway.adapters.slack._commands import native_spelling
from gateway.adapters.slack._ephemeral import post_ephemeral
from gateway.adapters.slack._errors import platform_errors
from gateway.adapters.slack._format import to_mrkdwn
from gateway.adapters.slack._inbound import SlackInbound
from gateway.adapters.slack._settings import SlackSettings
from gateway.adapters.slack._voice import upload_voice
from gateway.events import InboundMessage, OutboundMessage, SentMessage


class SlackOutbound(BaseAdapter):
    """What ``SlackAdapter`` sends; its ``__init__`` sets the state declared here."""

    _settings: SlackSettings
    _client: AsyncWebClient
    _busy: BusyIndicator
    _inbound: SlackInbound
    _command_names: list[str]

    async def publish_commands(
        self, commands: Sequence[CommandInfo], admin_ids: Sequence[str]
    ) -> None:
        """Slack's command lives in the app manifest; the names (and aliases) spell
        answers and notices natively (``/new`` → ``/chorus new``)."""
        self._command_names = [name for c in commands for name in (c.name, *c.aliases)]

    def _spelled(self, text: str) -> str:
        return native_spelling(text, self._command_names, self._settings.slash_command)

    async def send(self, message: OutboundMessage) -> SentMessage:
        thread = message.thread_id or message.reply_to_message_id
        text = message.text
        if message.kind != "reply":  # chorus's own words (/help, notices): Slack's spelling
            text = self._spelled(text)
        with platform_errors():
            answer = await self._client.chat_postMessage(
                channel=message.chat_id, text=to_mrkdwn(text), thread_ts=thread
            )
        channel = str(answer.get("channel") or message.chat_id)
        self._busy.answered(channel, str(thread) if thread else None)
        if thread:
            self._inbound.answered_in(channel, str(thread))
        return SentMessage(channel, str(answer["ts"]), message.thread_id)

    async def busy(self, msg: InboundMessage) -> bool:
        """The thread's status in an assistant thread, else a reaction (``_busy``)."""
        return self._busy.show(msg)

    async def not_busy(self, msg: InboundMessage) -> None:
        self._busy.hide(msg)

    async def send_choice(
        self, message: OutboundMessage, choices: Sequence[tuple[str, str]]
    ) -> SentMessage:
        """The text as plain text with buttons (``_actions.choice_blocks``)."""
        thread = message.thread_id or message.reply_to_message_id
        with platform_errors():
            answer = await self._client.chat_postMessage(
                channel=message.chat_id,
                text=to_mrkdwn(message.text),
                blocks=choice_blocks(message.text, choices),
                thread_ts=thread,
            )
        return SentMessage(str(answer.get("channel") or message.chat_id), str(answer["ts"]))

    async def send_choice_privately(
        self, user_id: str, text: str, choices: Sequence[tuple[str, str]]
    ) -> SentMessage:
        """Posted to the person's id: their direct chat with the app."""
        return await self.send_choice(OutboundMessage(self.name, user_id, text), choices)

    async def close_choice(self, sent: SentMessage, text: str) -> None:
        with platform_errors():
            await close_card(self._client, sent, text)

    async def send_private(self, msg: InboundMessage, text: str) -> bool:
        await post_ephemeral(
            self._client, msg, self._spelled(text), self.capabilities.max_text_length
        )
        return True  # ephemeral: in the channel, for them alone

    async def send_file(self, chat_id: str, filename: str, data: bytes, caption: str) -> None:
        """slack_sdk's ``files_upload_v2``: ``files.getUploadURLExternal``, the upload, then
        ``files.completeUploadExternal`` shares it into the channel with ``caption``."""
        self.check_file_size(data)
        with platform_errors():
            await self._client.files_upload_v2(
                channel=chat_id,
                file=data,
                filename=filename,
                title=filename,
                initial_comment=caption or None,
            )

    async def send_voice(
        self,
        chat_id: str,
        audio: bytes,
        *,
        thread_id: str | None = None,
        reply_to: str | None = None,
    ) -> None:
        """An audio file in the thread the text answer went to."""
        self.check_file_size(audio)
        await upload_voice(self._client, chat_id, audio, thread_id or reply_to)

    async def edit(self, sent: SentMessage, text: str) -> None:
        mrkdwn = to_mrkdwn(text)
        with platform_errors():
            await self._client.chat_update(channel=sent.chat_id, ts=sent.message_id, text=mrkdwn)

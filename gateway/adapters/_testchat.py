"""An in-memory platform: tests push messages in and pop replies out.

Modelled on errbot's test backend. It behaves like a real platform adapter —
the runner cannot tell — so every runner behaviour is provable through it.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from gateway.adapters._base import AdapterCapabilities, BaseAdapter
from gateway.adapters._delivery import send_text
from gateway.errors import ChatForbidden, MessageNotFound
from gateway.events import (
    InboundMessage,
    OutboundMessage,
    Quoted,
    SentMessage,
    message_from_json,
    message_to_json,
)


@dataclass
class Delivered:
    """A message as the platform shows it now (edits applied)."""

    chat_id: str
    message_id: str
    text: str
    thread_id: str | None = None
    reply_to: str | None = None
    kind: str = "reply"
    edits: int = 0
    history: list[str] = field(default_factory=list)
    done: bool = False


@dataclass
class SentFile:
    """A file the bot sent into a chat."""

    chat_id: str
    filename: str
    data: bytes
    caption: str


class TestChatAdapter(BaseAdapter):
    __test__ = False  # a platform for tests, not a test class

    def __init__(
        self,
        name: str = "testchat",
        *,
        capabilities: AdapterCapabilities | None = None,
        prompt_hint: str = "",
    ) -> None:
        super().__init__()
        self.name = name
        self.prompt_hint = prompt_hint
        self.capabilities = capabilities or AdapterCapabilities(
            max_text_length=4000,
            edits=True,
            typing=True,
            min_edit_interval=0.0,
            quotes=True,
            max_file_size=10 * 1024 * 1024,
        )
        self.sent: list[Delivered] = []
        self.typing_calls: list[str] = []
        self._outbox: asyncio.Queue[Delivered] = asyncio.Queue()
        self._ids = itertools.count(1)
        self._message_ids = itertools.count(1)
        self._run = uuid.uuid4().hex[:6]  # ids differ from another run's, like a platform's
        self.started = False
        self.connected = True
        self.unreachable: set[str] = set()
        """Users the bot cannot write to privately (no direct chat with it)."""
        self.walled: set[str] = set()
        """Chats the bot may not write to (blocked, no permission): a send is ``ChatForbidden``."""
        self.refused: list[OutboundMessage] = []
        """What was sent into a walled chat (and refused)."""
        self.files: list[SentFile] = []
        """Files sent (``send_file``), in order."""
        self.arrived = asyncio.Event()
        """Set by every message sent: a waiter for the next one clears it, then waits."""

    async def connect(self) -> None:
        self.started = True

    async def stop(self) -> None:
        self.started = False

    def is_connected(self) -> bool:
        return self.started and self.connected

    async def push(
        self,
        text: str,
        *,
        user_id: str = "1",
        chat_id: str | None = None,
        user_name: str = "",
        thread_id: str | None = None,
        is_direct: bool | None = None,
        mentions_bot: bool = False,
        reply_to_bot: bool = False,
        message_id: str | None = None,
        quoted: tuple[Quoted, ...] = (),
    ) -> InboundMessage:
        """Deliver a message as if a person sent it (``quoted``: others' words it carries);
        returns what the runner got."""
        chat = chat_id if chat_id is not None else f"dm-{user_id}"
        message = InboundMessage(
            platform=self.name,
            chat_id=chat,
            user_id=user_id,
            user_name=user_name or f"user{user_id}",
            text=text,
            message_id=message_id or f"m{next(self._message_ids)}-{self._run}",
            thread_id=thread_id,
            is_direct=is_direct if is_direct is not None else chat_id is None,
            mentions_bot=mentions_bot,
            reply_to_bot=reply_to_bot,
            quoted=quoted,
        )
        receipt = f"{chat}/{message.message_id}"
        # handed on once committed; the platform's acknowledgement (this call's return)
        # waits for the disk
        if not await self.record(receipt, message_to_json(message), durable=False):
            await self.durable()
            return message  # delivered before: a platform's redelivery
        message = replace(message, receipts=(receipt,))
        await self.deliver(message)
        await self.durable()
        return message

    async def command(
        self,
        text: str,
        *,
        user_id: str = "1",
        chat_id: str | None = None,
        user_name: str = "",
        is_direct: bool | None = None,
    ) -> str:
        """A native slash command (``text`` is ``/name args``), as a command picker sends
        it; returns the private answer. Nothing is posted to the chat for it."""
        chat = chat_id if chat_id is not None else f"dm-{user_id}"
        message = InboundMessage(
            platform=self.name,
            chat_id=chat,
            user_id=user_id,
            user_name=user_name or f"user{user_id}",
            text=text,
            message_id=f"cmd{next(self._message_ids)}-{self._run}",
            is_direct=is_direct if is_direct is not None else chat_id is None,
        )
        return await self.answer_command(message)

    async def read_again(self, payload: str) -> InboundMessage | None:
        return message_from_json(payload)

    async def send(self, message: OutboundMessage) -> SentMessage:
        if message.chat_id in self.walled:
            self.refused.append(message)
            raise ChatForbidden(self.name, "Forbidden: bot was blocked by the user")
        delivered = Delivered(
            chat_id=message.chat_id,
            message_id=f"out{next(self._ids)}",
            text=message.text,
            thread_id=message.thread_id,
            reply_to=message.reply_to_message_id,
            kind=message.kind,
            history=[message.text],
        )
        self.sent.append(delivered)
        self.arrived.set()
        return SentMessage(message.chat_id, delivered.message_id, message.thread_id)

    async def send_private(self, msg: InboundMessage, text: str) -> bool:
        """Into the sender's direct chat (``dm-<user id>``, where ``push`` puts their DMs)."""
        if msg.user_id in self.unreachable:
            raise ChatForbidden(self.name, "no direct chat with this user")
        await send_text(
            self, OutboundMessage(platform=self.name, chat_id=f"dm-{msg.user_id}", text=text)
        )
        return False

    async def send_choice_privately(
        self, user_id: str, text: str, choices: Sequence[tuple[str, str]]
    ) -> SentMessage:
        """Into their direct chat, text alone (it names the commands), kept for editing."""
        if user_id in self.unreachable:
            raise ChatForbidden(self.name, "no direct chat with this user")
        sent = await self.send(OutboundMessage(self.name, f"dm-{user_id}", text))
        await self.message_done(sent)
        return sent

    async def send_file(self, chat_id: str, filename: str, data: bytes, caption: str) -> None:
        self.check_file_size(data)
        if chat_id in self.walled:
            raise ChatForbidden(self.name, "Forbidden: bot was blocked by the user")
        self.files.append(SentFile(chat_id, filename, data, caption))

    async def edit(self, sent: SentMessage, text: str) -> None:
        for delivered in self.sent:
            if delivered.message_id == sent.message_id:
                delivered.text = text
                delivered.edits += 1
                delivered.history.append(text)
                return
        raise MessageNotFound(self.name, f"no message {sent.message_id}")

    async def typing(self, chat_id: str, thread_id: str | None = None) -> None:
        self.typing_calls.append(chat_id)

    async def message_done(self, sent: SentMessage) -> None:
        for delivered in self.sent:
            if delivered.message_id == sent.message_id:
                delivered.done = True
                self._outbox.put_nowait(delivered)

    async def pop(self, timeout: float = 10.0) -> Delivered:
        """The next completed reply (waits for it)."""
        return await asyncio.wait_for(self._outbox.get(), timeout)

    def texts(self, chat_id: str | None = None) -> list[str]:
        return [d.text for d in self.sent if chat_id is None or d.chat_id == chat_id]

    def done_texts(self, chat_id: str | None = None) -> list[str]:
        """Texts of the messages that hold their final text (streaming is over)."""
        return [d.text for d in self.sent if d.done and (chat_id is None or d.chat_id == chat_id)]

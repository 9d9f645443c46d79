"""The adapter contract: implement this (and only this) to bring a platform to chorus."""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent.tracing import steps
from gateway.adapters._intake import Inbox, Intake, RouteHandler, SharedBudgets
from gateway.adapters._text_split import Length
from gateway.command_menu import MenuSubcommand
from gateway.errors import ChatForbidden, FileRefused, InboxError
from gateway.events import InboundMessage, OutboundMessage, Retraction, SentMessage, cleaned

if TYPE_CHECKING:
    from aiohttp import web

logger = logging.getLogger(__name__)

RECORD_RETRY_AFTER = 10
"""Seconds a platform is asked to wait (``Retry-After``) before it delivers again what
could not be recorded (the database is unreachable or its disk is full)."""


@dataclass(frozen=True, slots=True)
class AdapterCapabilities:
    """What a platform can do; the runner adapts delivery to it."""

    max_text_length: int = 4000
    edits: bool = False
    typing: bool = False
    min_edit_interval: float = 1.0
    """Seconds between two edits of one streamed message."""
    paced: bool = False
    """The adapter paces every send and edit to the platform's limits itself (a budget
    per chat and in all), so a final edit need not wait out ``min_edit_interval``."""
    length: Length = len
    """How the platform counts ``max_text_length``: ``len`` or ``utf16_length`` (Telegram)."""
    quotes: bool = False
    """A reply shows the message it answers above it, in the same conversation (Telegram,
    Discord); elsewhere (Slack) a reply opens a thread."""
    max_file_size: int = 0
    """Bytes of the largest file ``send_file`` can send (0: it sends no files)."""
    voice: bool = False
    """``send_voice`` sends a spoken reply (a voice message or an audio file)."""


@dataclass(frozen=True, slots=True)
class CommandInfo:
    """A slash command as a platform's command menu shows it."""

    name: str
    description: str
    admin_only: bool
    args: str = ""
    """What the command takes after its name ("" for nothing): a picker's one text option."""
    aliases: tuple[str, ...] = ()
    """Other names it answers to (``/reset`` for ``/new``)."""
    in_groups: bool = True
    """Whether group chats' command menus list it."""
    subcommands: tuple[MenuSubcommand, ...] = ()
    """Its subcommands with their options, where a platform can offer them (``/admin``)."""


class BaseAdapter(ABC):
    """A platform connection. ``start``/``stop`` are idempotent; ``stop`` never raises."""

    name: str = "base"
    capabilities: AdapterCapabilities = AdapterCapabilities()
    prompt_hint: str = ""
    """One line for the agent's system prompt about this platform (formatting, habits)."""

    def __init__(self) -> None:
        self._feed: Intake | None = None
        self._syncing: asyncio.Task[None] | None = None
        """The disk sync of the deliveries recorded with ``durable=False`` (``durable``)."""
        self.counters: Counter[str] = Counter()
        """Events of note (``skipped_updates``, …), exported as ``chorus_adapter_events_total``."""

    async def send_choice(
        self, message: OutboundMessage, choices: Sequence[tuple[str, str]]
    ) -> SentMessage:
        """``message`` with buttons, each ``(label, command)``: a press is that command from
        whoever pressed it. A platform without buttons sends the text alone, which names
        the commands to type."""
        del choices
        return await self.send(message)

    async def send_choice_privately(
        self, user_id: str, text: str, choices: Sequence[tuple[str, str]]
    ) -> SentMessage | None:
        """``send_choice`` into ``user_id``'s direct chat with the bot, and the message sent; a
        platform without buttons there sends the text alone (``send_private``), which names
        the commands, and returns None."""
        del choices
        message = InboundMessage(self.name, f"dm-{user_id}", user_id, "", "private")
        await self.send_private(message, text)
        return None

    async def close_choice(self, sent: SentMessage, text: str) -> None:
        """Replace the text of a ``send_choice`` message and take its buttons away (the
        choice was made); where messages cannot be edited, nothing."""
        if self.capabilities.edits:
            await self.edit(sent, text)

    async def answer_command(self, message: InboundMessage) -> str:
        """The private answer to a native command; ``message.text`` is ``/name args``."""
        if self._feed is None:
            raise RuntimeError(f"{self.name} adapter is not started")
        return await self._feed.on_command(cleaned(message))

    def accepting(self) -> bool:
        """Whether deliveries may be taken now (webhooks answer 503 when not)."""
        return self._feed is not None and self._feed.accepting()

    def share_send_budgets(self, budgets: SharedBudgets) -> None:
        """``start`` passes ``Intake.budgets`` here (several replicas): a platform whose
        sends are budgeted (Telegram's per-chat and global limits) draws from them too;
        others need nothing of it."""
        del budgets

    def polling_token(self) -> str | None:
        """The token of a long poller the platform allows only one of (Telegram's
        ``getUpdates``); None when this adapter does not poll that way."""
        return None

    async def record(self, receipt: str, payload: str, *, durable: bool = True) -> bool:
        """Record a delivery (sync storage, off the loop); False when it was seen before,
        so a redelivery is acknowledged but not handled again (``durable``: see
        ``record_many``)."""
        return (await self.record_many([(receipt, payload)], durable=durable))[0]

    async def record_many(
        self, deliveries: Sequence[tuple[str, str]], *, durable: bool = True
    ) -> list[bool]:
        """``record`` for a batch of ``(receipt, payload)``: one commit, one answer each.

        ``durable=False``: it returns once they are committed (a crash of the process
        keeps them), and the disk takes them meanwhile, so the turn need not wait for
        it; the platform must not be told they arrived before ``durable()`` returned."""
        steps.step("update read")
        inbox = self._feed.inbox if self._feed is not None else None
        if inbox is None or not deliveries:
            return [True] * len(deliveries)
        taken = await asyncio.to_thread(inbox.take_many, self.name, deliveries, durable=durable)
        steps.step("inbox record")
        if not durable:
            self._syncing = asyncio.create_task(self._sync(inbox, self._syncing))
        return taken

    async def _sync(self, inbox: Inbox, before: asyncio.Task[None] | None) -> None:
        if before is not None:  # one sync at a time; a later one covers what came since
            await before
        try:
            await asyncio.to_thread(inbox.sync)
        except Exception as exc:  # logged as a storage fault where it happened
            logger.debug("%s: the inbox could not be synced (%s)", self.name, exc)

    async def durable(self) -> None:
        """Wait until what ``record_many(durable=False)`` recorded so far survives a power
        cut: call it before the platform is told those deliveries arrived."""
        syncing = self._syncing
        if syncing is not None:
            await asyncio.shield(syncing)

    def not_recorded(self, exc: InboxError, count: int = 1) -> None:
        """``count`` deliveries could not be recorded and are left to the platform to send
        again. Counted; the storage fault itself is logged where it happened (one line)."""
        self.counters["unrecorded_deliveries"] += count
        logger.debug(
            "%s: %d delivery(ies) not recorded, left to the platform: %s", self.name, count, exc
        )

    @staticmethod
    def retry_later() -> dict[str, str]:
        """The headers of a 503 that asks the platform to deliver again later."""
        return {"Retry-After": str(RECORD_RETRY_AFTER)}

    def refuse_unrecorded(self) -> web.Response:
        """The HTTP answer to a webhook delivery that could not be recorded (and was
        counted, ``not_recorded``): 503 with ``Retry-After``, so the platform delivers
        it again later."""
        from aiohttp import web

        return web.json_response(
            {"error": "storage unavailable"},
            status=503,
            headers=self.retry_later(),
        )

    async def settled(self, receipts: Sequence[str]) -> None:
        """Deliveries that need nothing more (ignored, refused, answered)."""
        inbox = self._feed.inbox if self._feed is not None else None
        if inbox is not None and receipts:
            await asyncio.to_thread(inbox.done, self.name, receipts)

    async def read_again(self, payload: str) -> InboundMessage | None:
        """The message a recorded delivery holds, after a restart (None: nothing to answer).

        Adapters that ``record`` deliveries read their own payloads back here.
        """
        return None

    async def deliver(self, message: InboundMessage) -> None:
        """Hand an inbound message to the runner (adapters call this)."""
        if self._feed is None:
            raise RuntimeError(f"{self.name} adapter is not started")
        await self._feed.on_message(cleaned(message))

    async def retracted(self, retraction: Retraction) -> None:
        """Hand a deleted or edited message to the runner (adapters call this)."""
        feed = self._feed
        if feed is not None and feed.on_retraction is not None:
            await feed.on_retraction(retraction)

    async def start(self, intake: Intake) -> None:
        """Connect and begin delivering messages into ``intake``."""
        self._feed = intake
        if intake.budgets is not None:
            self.share_send_budgets(intake.budgets)
        await self.connect()

    @abstractmethod
    async def connect(self) -> None:
        """Connect to the platform (``start`` calls this; safe to call twice)."""

    @abstractmethod
    async def stop(self) -> None:
        """Disconnect; safe to call twice."""

    async def pause(self) -> None:
        """Stop taking new messages (shutdown begins), while replies can still be sent.

        What people send from now on should stay with the platform, to be
        delivered after the restart (Telegram: stop polling; Slack: answer 503).
        """
        return None

    @abstractmethod
    async def send(self, message: OutboundMessage) -> SentMessage:
        """Send one message (already within ``max_text_length``)."""

    async def edit(self, sent: SentMessage, text: str) -> None:
        """Replace the text of a sent message (only when ``capabilities.edits``)."""
        raise NotImplementedError(f"{self.name} cannot edit messages")

    async def message_done(self, sent: SentMessage) -> None:
        """Called once a sent (and possibly edited) message holds its final text."""
        return None

    async def send_file(self, chat_id: str, filename: str, data: bytes, caption: str) -> None:
        """Send ``data`` as a file named ``filename`` into ``chat_id``, with ``caption``.
        ``FileRefused`` when it is over ``capabilities.max_file_size`` or the platform
        cannot take files from the bot; another ``AdapterError`` when it failed."""
        del chat_id, filename, data, caption
        raise FileRefused(self.name, "sending files is not supported on this platform")

    async def send_voice(
        self,
        chat_id: str,
        audio: bytes,
        *,
        thread_id: str | None = None,
        reply_to: str | None = None,
    ) -> None:
        """Send ``audio`` (OGG/Opus) as a spoken reply into ``chat_id`` (and ``thread_id``), a
        reply to ``reply_to`` where the platform quotes (only when ``capabilities.voice``).
        ``FileRefused`` where it cannot; another ``AdapterError`` when it failed."""
        del chat_id, audio, thread_id, reply_to
        raise FileRefused(self.name, "voice messages are not supported on this platform")

    def check_file_size(self, data: bytes) -> None:
        """``FileRefused`` (with the limit) when ``data`` is over this platform's limit."""
        limit = self.capabilities.max_file_size
        if len(data) > limit:
            raise FileRefused(self.name, f"the file is over {limit:,} bytes", limit=limit)

    async def delete_message(self, chat_id: str, message_id: str) -> bool:
        """Delete a message someone sent in ``chat_id`` (a secret they typed). False when
        the platform does not let a bot do that; an ``AdapterError`` when it failed."""
        return False

    async def send_private(self, msg: InboundMessage, text: str) -> bool:
        """Show ``text`` (split at the platform's limit) to the sender of ``msg`` alone.

        True when it shows in ``msg``'s chat, to them only (Slack's ephemeral messages);
        False when it went to their direct chat with the bot (the group is told so).
        Raises ``ChatForbidden`` when the bot cannot reach them privately (they never
        started a chat with it, they take no direct messages, the platform has no way),
        another ``AdapterError`` when the platform failed."""
        raise ChatForbidden(self.name, "no private messages on this platform")

    def private_chat_link(self) -> str | None:
        """A link that opens a direct chat with the bot, for someone it may not write to
        first (Telegram's ``t.me`` deep link); None where there is none."""
        return None

    async def typing(self, chat_id: str, thread_id: str | None = None) -> None:
        """Show that a reply is being written (no-op where unsupported)."""
        return None

    async def busy(self, msg: InboundMessage) -> bool:
        """Start a lasting sign that an answer to ``msg`` is being written (Slack's thread
        status or a reaction), for ``not_busy`` to clear; True when there is one. Returns
        at once (the platform is asked in the background) and never raises."""
        return False

    async def not_busy(self, msg: InboundMessage) -> None:
        """Clear ``busy``'s sign, unless the answer already did; never raises."""
        return None

    async def ready(self, chat_id: str) -> None:
        """Wait until a send or edit to ``chat_id`` would go out without waiting for the
        platform's rate budget (nothing is spent). Streaming waits here before it
        takes the text to show, so what goes out is the newest text."""
        return None

    def http_routes(self) -> list[tuple[str, str, RouteHandler]]:
        """``(method, path, handler)`` to mount on the gateway's HTTP server (webhooks)."""
        return []

    async def publish_commands(
        self, commands: Sequence[CommandInfo], admin_ids: Sequence[str]
    ) -> None:
        """Show the commands in the platform's menu; admin commands only to ``admin_ids``."""
        return None

    def is_connected(self) -> bool:
        """Live connection state, for readiness probes."""
        return True

    def mode(self) -> str:
        """How it reaches the platform, for the gateway's "up" line (long polling, a
        webhook, Socket Mode…); "" when there is nothing to say."""
        return ""

    def failure(self) -> str | None:
        """Why this platform cannot work until an operator acts (its token was rejected),
        with what to fix; None while it works or is still trying (a network failure)."""
        return None

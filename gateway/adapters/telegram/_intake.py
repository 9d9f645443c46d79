"""Inbound messages on their way to the runner: in order per chat, split pastes merged.

Telegram clients send a pasted text longer than one message (4096 UTF-16 units) as
several messages. A text of at least ``PASTE_THRESHOLD`` units is therefore held
for ``window`` seconds; a plain-text continuation from the same person in the same
chat and thread joins it (and, if it is long too, is held in turn), and the
merged text is delivered as one message. Anything else from that person first
releases what is held, so the order stays as sent.

Each chat has its own lane (a queue and a task): a slow hand-over in one chat never
holds up another, and within a chat messages reach the runner in the order they
came. ``drain()`` releases everything held and waits for the lanes to finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace

from gateway.adapters._text_split import utf16_length
from gateway.events import InboundMessage

logger = logging.getLogger(__name__)

PASTE_THRESHOLD = 4000
"""UTF-16 units from which a text may be the first part of a split paste."""

Deliver = Callable[[InboundMessage], Awaitable[None]]


@dataclass(slots=True)
class _Held:
    message: InboundMessage
    deadline: float

    def join(self, more: InboundMessage) -> None:
        first, second = self.message.text, more.text
        glue = "" if first[-1:].isspace() or second[:1].isspace() else "\n"
        self.message = replace(
            self.message,
            text=f"{first}{glue}{second}",
            mentions_bot=self.message.mentions_bot or more.mentions_bot,
            reply_to_bot=self.message.reply_to_bot or more.reply_to_bot,
        )


@dataclass(slots=True)
class _Lane:
    chat_id: str
    queue: asyncio.Queue[InboundMessage | None] = field(default_factory=asyncio.Queue)
    held: dict[tuple[str, str | None], _Held] = field(default_factory=dict)
    task: asyncio.Task[None] | None = None


def _may_be_paste(message: InboundMessage) -> bool:
    return (
        not message.attachments
        and not message.text.startswith("/")
        and utf16_length(message.text) >= PASTE_THRESHOLD
    )


class Intake:
    def __init__(
        self,
        deliver: Deliver,
        *,
        window: float,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._deliver = deliver
        self._window = window
        self._now = now
        self._lanes: dict[str, _Lane] = {}
        self._draining = False

    def put(self, message: InboundMessage) -> None:
        """Queue a message for its chat's lane (never blocks)."""
        lane = self._lanes.get(message.chat_id)
        if lane is None:
            lane = _Lane(message.chat_id)
            self._lanes[message.chat_id] = lane
            lane.task = asyncio.create_task(self._run(lane), name=f"telegram-chat-{lane.chat_id}")
        lane.queue.put_nowait(message)

    async def drain(self, timeout: float) -> None:
        """Deliver everything queued or held now; wait at most ``timeout`` seconds."""
        self._draining = True
        tasks = []
        for lane in list(self._lanes.values()):
            lane.queue.put_nowait(None)  # wakes a lane waiting for a continuation
            if lane.task is not None:
                tasks.append(lane.task)
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=timeout)
        for task in pending:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if pending:
            logger.warning("%d telegram chat(s) still had messages at shutdown", len(pending))

    async def _run(self, lane: _Lane) -> None:
        while True:
            if lane.queue.empty() and not lane.held:
                if self._lanes.get(lane.chat_id) is lane:
                    del self._lanes[lane.chat_id]
                return
            message = await self._next(lane)
            if message is None:
                await self._release(lane, everything=self._draining)
            else:
                await self._take(lane, message)

    async def _next(self, lane: _Lane) -> InboundMessage | None:
        """The next queued message, or ``None`` once a held message is due."""
        if not lane.queue.empty() or not lane.held:
            return await lane.queue.get()
        wait = min(held.deadline for held in lane.held.values()) - self._now()
        if self._draining or wait <= 0:
            return None
        try:
            return await asyncio.wait_for(lane.queue.get(), wait)
        except TimeoutError:
            return None

    async def _take(self, lane: _Lane, message: InboundMessage) -> None:
        key = (message.user_id, message.thread_id)
        held = lane.held.get(key)
        if held is not None:
            if not message.attachments and not message.text.startswith("/"):
                held.join(message)
                if _may_be_paste(message) and not self._draining:
                    held.deadline = self._now() + self._window
                else:
                    del lane.held[key]
                    await self._hand_over(held.message)
                return
            del lane.held[key]
            await self._hand_over(held.message)
        if _may_be_paste(message) and self._window > 0 and not self._draining:
            lane.held[key] = _Held(message, self._now() + self._window)
            return
        await self._hand_over(message)

    async def _release(self, lane: _Lane, *, everything: bool) -> None:
        now = self._now()
        for key, held in list(lane.held.items()):
            if everything or held.deadline <= now:
                del lane.held[key]
                await self._hand_over(held.message)

    async def _hand_over(self, message: InboundMessage) -> None:
        try:
            await self._deliver(message)
        except Exception:
            logger.exception("handing a telegram message to the runner failed")

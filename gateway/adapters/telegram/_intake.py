"""Inbound messages on their way to the runner: in order per chat, split pastes merged.

Telegram clients send a pasted text longer than one message (4096 UTF-16 units) as
several messages. A text of at least ``PASTE_THRESHOLD`` units is therefore held
for ``window`` seconds; a plain-text continuation from the same person in the same
chat and thread joins it (and, if it is long too, is held in turn), and the
merged text is delivered as one message. Anything else from that person first
releases what is held, so the order stays as sent.

Hand-over goes through one ``ChatLanes``: a slow hand-over in one chat never holds
up another, and within a chat messages reach the runner in the order they were
released. ``drain()`` releases everything held and waits for the lanes to finish.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from gateway.adapters._support import ChatLanes
from gateway.adapters._text_split import utf16_length
from gateway.clock import Clock, SystemClock
from gateway.events import InboundMessage

logger = logging.getLogger(__name__)

PASTE_THRESHOLD = 4000
"""UTF-16 units from which a text may be the first part of a split paste."""

Deliver = Callable[[InboundMessage], Awaitable[None]]
_Key = tuple[str, str, str | None]
"""(chat, person, thread): whose held paste."""


@dataclass(slots=True)
class _Held:
    message: InboundMessage
    timer: asyncio.Task[None] | None = None

    def join(self, more: InboundMessage) -> None:
        first, second = self.message.text, more.text
        glue = "" if first[-1:].isspace() or second[:1].isspace() else "\n"
        self.message = replace(
            self.message,
            text=f"{first}{glue}{second}",
            mentions_bot=self.message.mentions_bot or more.mentions_bot,
            reply_to_bot=self.message.reply_to_bot or more.reply_to_bot,
            receipts=(*self.message.receipts, *more.receipts),
        )


def _may_be_paste(message: InboundMessage) -> bool:
    return (
        not message.attachments
        and not message.text.startswith("/")
        and utf16_length(message.text) >= PASTE_THRESHOLD
    )


def _continues(message: InboundMessage) -> bool:
    return not message.attachments and not message.quoted and not message.text.startswith("/")


class Intake:
    def __init__(self, deliver: Deliver, *, window: float, clock: Clock | None = None) -> None:
        self._deliver = deliver
        self._window = window
        self._clock = clock or SystemClock()
        self._held: dict[_Key, _Held] = {}
        self._lanes = ChatLanes("telegram")
        self._draining = False

    def put(self, message: InboundMessage) -> None:
        """Take a message (never blocks): held as a possible paste, or on its way."""
        key = (message.chat_id, message.user_id, message.thread_id)
        held = self._held.get(key)
        if held is not None:
            if _continues(message):
                held.join(message)
                if _may_be_paste(message) and not self._draining:
                    self._hold(key, held)
                else:
                    self._release(key)
                return
            self._release(key)
        if _may_be_paste(message) and self._window > 0 and not self._draining:
            self._hold(key, _Held(message))
            return
        self._hand_over(message)

    async def drain(self, timeout: float) -> None:
        """Deliver everything held or on its way now; wait at most ``timeout`` seconds."""
        self._draining = True
        for key in list(self._held):
            self._release(key)
        await self._lanes.drain(timeout)

    def _hold(self, key: _Key, held: _Held) -> None:
        """(Re)start the window of ``held``; its timer releases it when nothing follows."""
        if held.timer is not None:
            held.timer.cancel()
        self._held[key] = held
        held.timer = asyncio.create_task(self._expire(key, held), name="telegram-paste-window")

    async def _expire(self, key: _Key, held: _Held) -> None:
        await self._clock.sleep(self._window)
        if self._held.get(key) is held:
            held.timer = None
            self._release(key)

    def _release(self, key: _Key) -> None:
        held = self._held.pop(key, None)
        if held is None:
            return
        if held.timer is not None and held.timer is not asyncio.current_task():
            held.timer.cancel()
        self._hand_over(held.message)

    def _hand_over(self, message: InboundMessage) -> None:
        self._lanes.submit(message.chat_id, lambda: self._deliver(message))

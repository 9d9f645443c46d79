"""Replies on their way out: split at the platform's limit, streamed by edits where allowed.

``ReplyStream`` shows an answer while it is written — at most one send or edit per
``min_edit_interval`` — and ``finish()`` makes the final text land exactly, in as many
messages as the platform's limit needs. The rate budget is spent on what people see:
a streamed update waits for the platform's budget (``adapter.ready``) before it takes
the text, so it shows the newest text and the updates it overtook are never sent; an
answer that is complete before its first message could go out is sent once, final.
``send_text`` delivers a whole message at once (notices, command replies).

Platforms cannot delete messages through the adapter contract, so a streamed message
that the final text no longer needs is edited to ``WITHDRAWN_TEXT``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from gateway.adapters._base import BaseAdapter
from gateway.adapters._text_split import Length, TextPart, split_spans, split_text, utf16_length
from gateway.clock import Clock
from gateway.errors import AdapterError, ChatForbidden, FencedError
from gateway.events import OutboundMessage, SentMessage

__all__ = ["WITHDRAWN_TEXT", "ReplyStream", "send_text", "split_text", "utf16_length"]

logger = logging.getLogger(__name__)

WITHDRAWN_TEXT = "…"
"""What a streamed message shows when the final answer needs fewer messages."""


@dataclass(slots=True)
class _Shown:
    """A message of the answer, what it shows and which source text that is."""

    sent: SentMessage
    text: str
    start: int
    end: int
    at: float
    """Monotonic clock time of its last send or edit (an interval: a wall-clock jump
    must neither hold nor hurry the next edit)."""


async def send_text(
    adapter: BaseAdapter, message: OutboundMessage, *, length: Length | None = None
) -> list[SentMessage]:
    """Send ``message`` split at the adapter's limit (only the first part is a reply-to)."""
    sent: list[SentMessage] = []
    capabilities = adapter.capabilities
    parts = split_text(
        message.text, capabilities.max_text_length, length=length or capabilities.length
    )
    try:
        for index, part in enumerate(parts):
            reply_to = message.reply_to_message_id if index == 0 else None
            sent.append(
                await adapter.send(replace(message, text=part, reply_to_message_id=reply_to))
            )
    finally:
        for one in sent:
            await adapter.message_done(one)
    return sent


class ReplyStream:
    """One answer on its way into a chat.

    ``push()`` every streamed piece of text, then ``finish()`` with the final text (or
    ``abort()`` with a note). While streaming, the first message goes out once
    ``min_edit_interval`` has passed since the stream began (so a quick answer arrives
    as one message) and is then edited at most once per interval; text beyond the
    platform's limit continues in a new message.
    """

    def __init__(
        self,
        adapter: BaseAdapter,
        *,
        platform: str,
        chat_id: str,
        thread_id: str | None,
        reply_to: str | None,
        clock: Clock,
        streaming: bool = True,
        length: Length | None = None,
        resume: Sequence[SentMessage] = (),
        on_shown: Callable[[list[SentMessage]], Awaitable[None]] | None = None,
        fence: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """``resume``: messages a previous attempt at this answer had shown (it was cut by
        a restart); the final answer is edited into them. ``on_shown`` hears the
        messages shown so far each time one is added. ``fence`` runs before every send
        and edit and raises ``FencedError`` once this replica lost the session."""
        self._adapter = adapter
        self._platform = platform
        self._chat_id = chat_id
        self._thread_id = thread_id
        self._reply_to = reply_to
        self._clock = clock
        capabilities = adapter.capabilities
        self._length = length or capabilities.length
        self._limit = capabilities.max_text_length
        self._interval = capabilities.min_edit_interval
        self._paced = capabilities.paced
        self._live = streaming and capabilities.edits
        self._pieces: list[str] = []
        self._pushed = 0
        """How much text has been pushed, in characters."""
        self._done: list[_Shown] = []
        self._current: _Shown | None = None
        self._pos = 0
        self._reopened = ""
        self._last = clock.monotonic()
        self._sent_any = False
        self._closed = False
        self._wall: ChatForbidden | None = None
        """The chat refused a streamed update for good: the answer cannot land there."""
        self._on_shown = on_shown
        self._fence = fence
        self._update: asyncio.Task[None] | None = None
        self._updating = False
        """Whether the pending update is sending (past waiting for the budget)."""
        if resume and capabilities.edits:
            self._live = False  # the answer lands once, in the messages already there
            self._done = [_Shown(sent, "", 0, 0, -math.inf) for sent in resume]
            self._sent_any = True

    @property
    def text(self) -> str:
        """Everything pushed so far."""
        if len(self._pieces) > 1:
            self._pieces = ["".join(self._pieces)]
        return self._pieces[0] if self._pieces else ""

    @property
    def shown(self) -> bool:
        """Whether words of this answer are in the chat (streamed into a message)."""
        return bool(self._current or any(m.text for m in self._done)) and bool(self.text.strip())

    async def push(self, delta: str) -> None:
        """Add a streamed piece of text; shows it when the edit interval allows."""
        if self._closed or not delta:
            return
        self._pieces.append(delta)
        self._pushed += len(delta)
        due = self._clock.monotonic() - self._last >= self._interval
        if self._live and due and self._update is None:
            self._update = asyncio.create_task(self._update_when_ready())

    async def _update_when_ready(self) -> None:
        """Once the budget allows, show the newest text (a push starts this when due).

        Text pushed while an update was being sent is shown by the next one, an edit
        interval later, so the chat catches up even when the model then pauses (no
        later push comes to start an update).
        """
        try:
            while self._live and not self._closed:
                wait = self._last + self._interval - self._clock.monotonic()
                if wait > 0:
                    await self._clock.sleep(wait)
                await self._adapter.ready(self._chat_id)
                pushed = self._pushed
                self._updating = True
                await self._refresh()
                self._updating = False
                if self._pushed == pushed:
                    break
        finally:
            self._updating = False
            self._update = None

    async def _end_update(self) -> None:
        """The answer is complete: an update still waiting for the budget is dropped."""
        task = self._update
        if task is None:
            return
        if not self._updating:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise asyncio.CancelledError

    async def finish(self, final_text: str) -> list[SentMessage]:
        """Make ``final_text`` the answer, exactly; returns its messages in order. Raises
        the ``ChatForbidden`` of a streamed update without sending again (the chat refuses
        the bot: blocked, no permission, archived)."""
        self._close()
        await self._end_update()
        if self._wall is not None:
            raise self._wall
        return await self._settle(final_text)

    async def abort(self, note: str) -> list[SentMessage]:
        """End an interrupted answer: the streamed text so far plus ``note``, or the note."""
        self._close()
        await self._end_update()
        if self._wall is not None:
            return []  # the chat refuses the bot: nothing to end there
        so_far = self.text.rstrip()
        if not (self._done or self._current) or not so_far:
            return await self._settle(note)
        return await self._settle(f"{so_far}\n\n{note.strip()}" if note.strip() else so_far)

    def _close(self) -> None:
        if self._closed:
            raise RuntimeError("this reply has already been finished")
        self._closed = True

    async def _refresh(self) -> None:
        """Show the text so far: edit the current message, continue in new ones past the limit."""
        parts = split_spans(
            self.text, self._limit, length=self._length, start=self._pos, reopened=self._reopened
        )
        acted = False
        try:
            for index, part in enumerate(parts):
                if self._current is None:
                    acted = True
                    self._current = await self._send(part)
                elif self._current.text != part.text:
                    acted = True
                    await self._fenced()
                    await self._adapter.edit(self._current.sent, part.text)
                    self._show(self._current, part)
                else:
                    self._current.end = part.end
                if index < len(parts) - 1:
                    self._done.append(self._current)
                    self._current = None
                    self._pos, self._reopened = parts[index + 1].start, parts[index + 1].reopened
        except FencedError:
            self._live = False  # the turn learns it at its end
        except ChatForbidden as exc:
            self._live = False  # nothing more is sent there; the turn learns it at its end
            self._wall = exc
        except AdapterError as exc:
            self._live = False
            logger.warning(
                "streaming a reply to %s chat %s stopped (%s); the answer follows when complete",
                self._platform,
                self._chat_id,
                type(exc).__name__,
            )
        if acted:
            self._last = self._clock.monotonic()

    async def _settle(self, final: str) -> list[SentMessage]:
        """Deliver ``final`` into the messages already shown, then in new ones."""
        streamed = self.text
        parts = split_spans(final, self._limit, length=self._length)
        shown = [*self._done, *([self._current] if self._current else [])]
        answer: list[_Shown] = []
        try:
            index = 0
            for message in shown:
                answer.append(message)
                if index >= len(parts):
                    if message.text != WITHDRAWN_TEXT:
                        await self._correct(message, TextPart(WITHDRAWN_TEXT, 0, 0))
                    continue
                part = parts[index]
                if message.text == part.text or await self._correct(message, part):
                    index += 1
                elif message.start == part.start and (
                    final[message.start : message.end] == streamed[message.start : message.end]
                ):
                    # It keeps showing a true beginning of this part: the rest follows it.
                    rest = split_spans(final, self._limit, length=self._length, start=message.end)
                    parts[index + 1 :] = rest
                    index += 1
                else:
                    logger.warning(
                        "a streamed message in %s chat %s could not be corrected",
                        self._platform,
                        self._chat_id,
                    )
            for part in parts[index:]:
                answer.append(await self._send(part))
        finally:
            for message in answer:
                await self._adapter.message_done(message.sent)
        return [message.sent for message in answer]

    async def _correct(self, message: _Shown, part: TextPart) -> bool:
        """Edit ``message`` to ``part``; False if it failed.

        On a platform whose adapter paces every call (``capabilities.paced``) the final
        text goes out as soon as that budget allows, so an answer completed just after
        its first streamed words lands at once; elsewhere it waits out the edit interval.
        """
        if not self._paced:
            wait = message.at + self._interval - self._clock.monotonic()
            if wait > 0:
                await self._clock.sleep(wait)
        await self._fenced()
        try:
            await self._adapter.edit(message.sent, part.text)
        except AdapterError as exc:
            logger.warning(
                "editing a reply in %s chat %s failed (%s)",
                self._platform,
                self._chat_id,
                type(exc).__name__,
            )
            return False
        self._show(message, part)
        return True

    def _show(self, message: _Shown, part: TextPart) -> None:
        message.text, message.start, message.end = part.text, part.start, part.end
        message.at = self._clock.monotonic()

    async def _fenced(self) -> None:
        if self._fence is not None:
            await self._fence()

    async def _send(self, part: TextPart) -> _Shown:
        await self._fenced()
        outbound = OutboundMessage(
            platform=self._platform,
            chat_id=self._chat_id,
            text=part.text,
            thread_id=self._thread_id,
            reply_to_message_id=None if self._sent_any else self._reply_to,
        )
        sent = await self._adapter.send(outbound)
        self._sent_any = True
        shown = _Shown(sent, part.text, part.start, part.end, self._clock.monotonic())
        if self._on_shown is not None:
            earlier = [m.sent for m in self._done]
            if self._current is not None:
                earlier.append(self._current.sent)
            try:
                await self._on_shown([*earlier, sent])
            except Exception as exc:
                logger.warning("noting a shown message failed (%s)", type(exc).__name__)
        return shown

"""``Replies``: every answer and notice on its way down to the adapters.

The runner (intake) and the sessions (turns) both speak through one
``Replies``, built in the wiring with every adapter of the process: notices go
out whole (``notice``), answers as a ``ReplyStream`` (``stream``), and the
typing indicator is kept up while an answer is written (``keep_typing``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence

from gateway import _texts as t
from gateway.adapters._base import BaseAdapter
from gateway.adapters._delivery import ReplyStream, send_text
from gateway.adapters._walls import Walls, wall_in
from gateway.clock import Clock
from gateway.errors import AdapterError, ChatForbidden
from gateway.events import InboundMessage, OutboundMessage, SentMessage

__all__ = ["TYPING_AFTER_AT_MOST", "TYPING_INTERVAL", "Replies"]

logger = logging.getLogger(__name__)

TYPING_INTERVAL = 4.0
"""Seconds between two typing indicators (platforms show one for about five)."""
TYPING_AFTER_AT_MOST = 0.5
"""Seconds at most the first indicator waits for the turn's start (``keep_typing``)."""

Counted = Callable[[str], None]
"""Told the platform of each reply that went out (the metrics)."""
Shown = Callable[[list[SentMessage]], Awaitable[None]]
Fence = Callable[[], Awaitable[None]]
"""Raises ``FencedError`` once this replica lost the session (before each send and edit)."""


def _uncounted(_: str) -> None:
    return None


class Replies:
    def __init__(
        self, adapters: Iterable[BaseAdapter], clock: Clock, *, counted: Counted = _uncounted
    ) -> None:
        self.adapters: dict[str, BaseAdapter] = {a.name: a for a in adapters}
        self._clock = clock
        self._counted = counted
        self.walls = Walls(clock)
        """Chats the bot may not write to, logged once per chat per hour."""

    def adapter(self, platform: str) -> BaseAdapter | None:
        return self.adapters.get(platform)

    def counted(self, platform: str) -> None:
        """One more reply went out on ``platform``."""
        self._counted(platform)

    def walled(self, msg: InboundMessage, exc: BaseException) -> bool:
        """Whether ``exc`` says the bot may not write in ``msg``'s chat (blocked, no
        permission, archived); if so it is logged calmly (``Walls``) and the caller sends
        nothing more there for ``msg``."""
        wall = wall_in(exc)
        if wall is None:
            return False
        self.walls.hit(msg.platform, msg.chat_id, wall)
        return True

    async def notice(self, msg: InboundMessage, text: str, kind: str = "notice") -> None:
        """Tell the sender of ``msg`` something, in its chat (a reply to it in a group);
        ``kind`` "stranger": a notice to someone the bot does not serve. A chat the bot
        may not write to gets nothing (and one calm log line, ``walled``)."""
        adapter = self.adapters.get(msg.platform)
        if adapter is None:
            logger.error("no adapter for platform %s", msg.platform)
            return
        out = OutboundMessage(
            platform=msg.platform,
            chat_id=msg.chat_id,
            text=text,
            thread_id=msg.thread_id,
            reply_to_message_id=None if msg.is_direct else msg.message_id,
            kind="error" if kind == "error" else "notice",
            to_stranger=kind == "stranger",
        )
        try:
            await send_text(adapter, out)
        except ChatForbidden as exc:
            self.walled(msg, exc)
            return
        self._counted(msg.platform)

    async def private(self, msg: InboundMessage, text: str) -> None:
        """Show ``text`` to the sender of ``msg`` alone (an answer not for the whole group):
        ephemeral where the platform has that, else in their direct chat with the bot and a
        short note in ``msg``'s chat; the text never goes to ``msg``'s chat itself."""
        adapter = self.adapters.get(msg.platform)
        if adapter is None:
            logger.error("no adapter for platform %s", msg.platform)
            return
        try:
            in_place = await adapter.send_private(msg, text)
        except ChatForbidden as exc:
            logger.info("no private way to %s on %s (%s)", msg.user_key, msg.platform, exc.detail)
            link = adapter.private_chat_link()
            note = t.START_CHAT_FIRST.format(link=link) if link else t.NO_PRIVATE_CHAT
        except AdapterError as exc:
            logger.warning("a private answer to %s failed (%s)", msg.user_key, exc)
            note = t.PRIVATE_FAILED
        else:
            self._counted(msg.platform)
            if in_place:
                return
            note = t.SENT_PRIVATELY
        await self.notice(msg, note)

    async def conclude(self, msg: InboundMessage, text: str) -> None:
        """The last word on ``msg``: edited into the messages an answer to it had shown
        before a restart (``msg.resume``), so none stays frozen above it; else sent anew."""
        if msg.platform not in self.adapters:
            logger.error("no adapter for platform %s", msg.platform)
            return
        await self.stream(msg, streaming=False, resume=msg.resume).finish(text)
        self._counted(msg.platform)

    def stream(
        self,
        msg: InboundMessage,
        *,
        streaming: bool,
        resume: Sequence[str] = (),
        on_shown: Shown | None = None,
        reply_to: str | None = None,
        fence: Fence | None = None,
    ) -> ReplyStream:
        """The answer to ``msg`` as it is written: edited in place where ``streaming``;
        ``resume`` are the ids of messages an earlier run of the turn already showed.
        It is a reply to ``reply_to`` when given, else to ``msg`` outside direct chats."""
        adapter = self.adapters[msg.platform]
        return ReplyStream(
            adapter,
            platform=msg.platform,
            chat_id=msg.chat_id,
            thread_id=msg.thread_id,
            reply_to=reply_to or (None if msg.is_direct else msg.message_id),
            clock=self._clock,
            streaming=streaming and adapter.capabilities.edits,
            resume=[SentMessage(msg.chat_id, m, msg.thread_id) for m in resume],
            on_shown=on_shown,
            fence=fence,
        )

    async def keep_typing(self, msg: InboundMessage, after: asyncio.Event | None = None) -> None:
        """Show that an answer to ``msg`` is being written until cancelled: the typing
        indicator renewed where there is one, the adapter's lasting sign (``busy``) where
        there is one, cleared at the end (``not_busy``).

        With ``after``, the first sign waits until it is set (the turn's request has
        left for the model) or ``TYPING_AFTER_AT_MOST`` has passed: in a burst, the
        people whose requests go first are not held up by everyone's indicators."""
        adapter = self.adapters.get(msg.platform)
        if adapter is None:
            return
        if after is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(TYPING_AFTER_AT_MOST):
                    await after.wait()
        shown = await adapter.busy(msg)
        if not shown and not adapter.capabilities.typing:
            return
        try:
            with contextlib.suppress(Exception):
                while adapter.capabilities.typing:
                    await adapter.typing(msg.chat_id, msg.thread_id)
                    await self._clock.sleep(TYPING_INTERVAL)
            await asyncio.Event().wait()  # until cancelled
        finally:
            if shown:
                await adapter.not_busy(msg)

    def typing(self, msg: InboundMessage, after: asyncio.Event | None = None) -> asyncio.Task[None]:
        """``keep_typing`` as a task; cancel it when the answer starts to be delivered."""
        return asyncio.create_task(self.keep_typing(msg, after))

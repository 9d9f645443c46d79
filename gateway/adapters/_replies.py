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

from gateway.adapters._base import BaseAdapter
from gateway.adapters._delivery import ReplyStream, send_text
from gateway.clock import Clock
from gateway.events import InboundMessage, OutboundMessage, SentMessage

__all__ = ["TYPING_INTERVAL", "Replies"]

logger = logging.getLogger(__name__)

TYPING_INTERVAL = 4.0
"""Seconds between two typing indicators (platforms show one for about five)."""

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

    def adapter(self, platform: str) -> BaseAdapter | None:
        return self.adapters.get(platform)

    def counted(self, platform: str) -> None:
        """One more reply went out on ``platform``."""
        self._counted(platform)

    async def notice(self, msg: InboundMessage, text: str, kind: str = "notice") -> None:
        """Tell the sender of ``msg`` something, in its chat (a reply to it in a group)."""
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
        )
        await send_text(adapter, out)
        self._counted(msg.platform)

    def stream(
        self,
        msg: InboundMessage,
        *,
        streaming: bool,
        resume: Sequence[str] = (),
        on_shown: Shown | None = None,
        fence: Fence | None = None,
    ) -> ReplyStream:
        """The answer to ``msg`` as it is written: edited in place where ``streaming``;
        ``resume`` are the ids of messages an earlier run of the turn already showed."""
        adapter = self.adapters[msg.platform]
        return ReplyStream(
            adapter,
            platform=msg.platform,
            chat_id=msg.chat_id,
            thread_id=msg.thread_id,
            reply_to=None if msg.is_direct else msg.message_id,
            clock=self._clock,
            streaming=streaming and adapter.capabilities.edits,
            resume=[SentMessage(msg.chat_id, m, msg.thread_id) for m in resume],
            on_shown=on_shown,
            fence=fence,
        )

    async def keep_typing(self, msg: InboundMessage) -> None:
        """Show the typing indicator in ``msg``'s chat until cancelled (where there is one)."""
        adapter = self.adapters.get(msg.platform)
        if adapter is None or not adapter.capabilities.typing:
            return
        with contextlib.suppress(Exception):
            while True:
                await adapter.typing(msg.chat_id, msg.thread_id)
                await self._clock.sleep(TYPING_INTERVAL)

    def typing(self, msg: InboundMessage) -> asyncio.Task[None]:
        """``keep_typing`` as a task; cancel it when the answer starts to be delivered."""
        return asyncio.create_task(self.keep_typing(msg))

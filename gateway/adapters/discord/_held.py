"""Discord messages the inbox could not record (its storage failing) wait here.

Discord sends nothing again, so a message that cannot be recorded when it
arrives (a full disk, the database down) is kept in memory, in arrival order,
and recorded and handled once the storage works again; while one waits, every
later message waits behind it, so none overtakes another. Each person whose
direct message waits is told once per outage that it is kept. What waits here
is lost only if the process itself ends before the storage comes back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from gateway.clock import Clock
from gateway.errors import InboxError
from gateway.events import InboundMessage

logger = logging.getLogger(__name__)

RETRY_SECONDS = 2.0
"""How often the waiting messages are offered to the storage again."""
MAX_HELD = 1000
"""Messages held at most; past this a new one is dropped (one WARNING line an outage)."""

Record = Callable[[str, str], Awaitable[bool]]
"""Records a delivery (receipt, payload); False when it was seen before; InboxError."""
Handle = Callable[[InboundMessage, object], None]
"""Hands a recorded message (and Discord's own object of it) on, in its chat's lane."""
Tell = Callable[[str], Awaitable[None]]
"""Tells the person of a direct-message chat that their message waits for the storage."""


@dataclass(frozen=True, slots=True)
class _Waiting:
    read: InboundMessage
    source: object
    payload: str


class HeldMessages:
    """Messages waiting for the storage, recorded and handed on in order once it works."""

    def __init__(
        self, record: Record, handle: Handle, tell: Tell, clock: Clock, retry: float = RETRY_SECONDS
    ) -> None:
        self._record = record
        self._handle = handle
        self._tell = tell
        self._clock = clock
        self._retry = retry
        self._waiting: deque[_Waiting] = deque()
        self._told: set[str] = set()
        self._dropped = False
        self._task: asyncio.Task[None] | None = None

    @property
    def waiting(self) -> int:
        """How many messages wait for the storage."""
        return len(self._waiting)

    async def hold(self, read: InboundMessage, source: object, payload: str) -> None:
        """Keep ``read`` until the storage takes it; tell its sender once (direct chats)."""
        if len(self._waiting) >= MAX_HELD:
            if not self._dropped:
                self._dropped = True
                logger.warning(
                    "discord: %d messages already wait for the storage; newer ones are dropped",
                    MAX_HELD,
                )
            return
        self._waiting.append(_Waiting(read, source, payload))
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._offer(), name="discord-held-messages")
        if read.is_direct and read.chat_id not in self._told:
            self._told.add(read.chat_id)
            try:
                await self._tell(read.chat_id)
            except Exception as exc:
                logger.warning("discord: telling a waiting person failed (%s)", type(exc).__name__)

    async def _offer(self) -> None:
        """Offer the waiting messages to the storage, oldest first, until all are taken."""
        while self._waiting:
            await self._clock.sleep(self._retry)
            while self._waiting:
                first = self._waiting[0]
                try:
                    fresh = await self._record(first.read.message_id, first.payload)
                except InboxError:
                    break  # still failing: logged where it failed; the next round tries again
                self._waiting.popleft()
                if fresh:
                    self._handle(first.read, first.source)
        self._told.clear()
        self._dropped = False

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

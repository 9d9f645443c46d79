"""The sessions' durable inbox at run time: settle what is answered, take up what a restart left.

See ``gateway.sessions.Inbox`` for the table. A message's deliveries are settled
once nothing more is owed for it (by the intake for what needs no turn, by the
turn for what it answered; a failed settle is retried), the messages of an
answer being streamed are noted and so is the finished answer before it is
delivered. At start-up a pending delivery whose answer was noted gets that answer
again, in the same messages (it is not asked of the model twice); every other
goes back through the normal intake — or, past
``sessions.resume_pending_minutes``, its sender is told it could not be answered,
in the messages of a half answer where there is one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial

from gateway import _texts as t
from gateway.adapters import BaseAdapter
from gateway.clock import Clock
from gateway.config import Settings
from gateway.errors import InboxError
from gateway.events import InboundMessage, SentMessage
from gateway.sessions._inbox import Inbox
from memory.errors import SessionFenced
from memory.transcripts import Fence

logger = logging.getLogger(__name__)

Take = Callable[[InboundMessage], Awaitable[None]]
Notice = Callable[[InboundMessage, str], Awaitable[None]]
"""Deliver a text as the last word on a message (``Replies.conclude``)."""
Settled = Callable[[list[InboundMessage]], Awaitable[None]]
Left = dict[str, set[str]]
"""Per platform, the receipts of the deliveries a restart left pending."""

NOTE_THREADS = 2
"""Threads that only write notes of shown messages and finished answers."""
SETTLE_RETRIES = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0)
"""Seconds before each new try of a settle that failed (a locked database, a blip)."""


class InboxKeeper:
    def __init__(
        self,
        inbox: Inbox,
        clock: Clock,
        settings: Callable[[], Settings],
        *,
        on_settled: Settled | None = None,
    ) -> None:
        self.inbox = inbox
        self._clock = clock
        self._settings = settings
        self._on_settled = on_settled
        """Told after each settle (replicas acknowledge their mailbox entries)."""
        self._notes = ThreadPoolExecutor(NOTE_THREADS, thread_name_prefix="inbox-notes")
        """Notes go out at once, never queued behind the process's other blocking work:
        between a message reaching the chat and its note, a kill would leave it behind."""

    def close(self) -> None:
        """Wait for the notes being written; no more are taken."""
        self._notes.shutdown(wait=True)

    async def _noted(self, write: Callable[[], None]) -> None:
        await asyncio.get_running_loop().run_in_executor(self._notes, write)

    async def settle(self, batch: list[InboundMessage], fence: Fence | None = None) -> None:
        """Cross the messages' deliveries off: nothing more is owed for them. With
        ``fence`` (a replica's turn) nothing is settled once another replica took the
        session over: its new owner settles them."""
        for platform in {m.platform for m in batch}:
            receipts = [r for m in batch if m.platform == platform for r in m.receipts]
            if receipts and not await self._settle(platform, receipts, fence):
                return
        if self._on_settled is not None:
            try:
                await self._on_settled(batch)
            except Exception as exc:
                logger.warning("a settle listener failed (%s)", type(exc).__name__)

    async def _settle(self, platform: str, receipts: list[str], fence: Fence | None) -> bool:
        for attempt, wait in enumerate((*SETTLE_RETRIES, None)):
            try:
                await asyncio.to_thread(self.inbox.done, platform, receipts, fence)
                return True
            except SessionFenced:
                logger.info(
                    "%d %s deliveries left to the replica that took their session over",
                    len(receipts),
                    platform,
                )
                return False
            except Exception as exc:
                reason = type(exc).__name__
                if wait is None:
                    logger.error(
                        "settling %d %s deliveries failed %d times (%s); they stay pending"
                        " and a restart takes them up (a noted answer is not asked again)",
                        len(receipts),
                        platform,
                        attempt + 1,
                        reason,
                    )
                    return False
                logger.warning("settling failed (%s); retry in %.1fs", reason, wait)
                await asyncio.sleep(wait)
        return False

    async def answering(
        self, batch: list[InboundMessage], answer: str, fence: Fence | None = None
    ) -> None:
        """Note the finished answer before it is delivered: a restart before the settle
        delivers it again into the same messages instead of asking the model twice."""
        for platform in {m.platform for m in batch}:
            receipts = [r for m in batch if m.platform == platform for r in m.receipts]
            if not receipts:
                continue
            try:
                await self._noted(partial(self.inbox.answering, platform, receipts, answer, fence))
            except SessionFenced:
                raise  # another replica has the session: this one delivers nothing
            except Exception as exc:  # delivered all the same; a restart would answer again
                logger.warning("the answer could not be noted (%s)", type(exc).__name__)

    def noting_shown(
        self, platform: str, receipts: list[str], fence: Fence | None = None
    ) -> Callable[[list[SentMessage]], Awaitable[None]] | None:
        """What a stream calls with its messages so far, so a restart can finish them.
        It is called as soon as a message was sent, and the note is written on threads of
        its own (a kill before the note is written leaves that message behind)."""
        if not receipts:
            return None

        async def note(shown: list[SentMessage]) -> None:
            ids = [m.message_id for m in shown]
            try:
                await self._noted(partial(self.inbox.shown, platform, receipts, ids, fence))
            except SessionFenced:
                raise  # another replica has the session: this turn stops
            except Exception as exc:
                logger.warning("the inbox could not be updated (%s)", type(exc).__name__)

        return note

    async def left(self, platforms: Iterable[str]) -> Left:
        """What a restart left pending, read before the platforms connect: a message
        arriving while the process starts is the intake's, never taken up twice."""
        try:
            await asyncio.to_thread(self.inbox.prune)
            return {
                name: {row.receipt for row in await asyncio.to_thread(self.inbox.pending, name)}
                for name in platforms
            }
        except InboxError as exc:  # the database: one line; they are taken up at the next start
            logger.warning("reading messages left by a restart failed: %s", exc)
        except Exception:
            logger.exception("reading messages left by a restart failed")
        return {}

    async def resume(
        self, adapters: Iterable[BaseAdapter], take: Take, notice: Notice, left: Left
    ) -> None:
        """Take up what a restart left unanswered (the deliveries of ``left``): answer
        it, or say it cannot be."""
        try:
            for adapter in adapters:
                receipts = left.get(adapter.name)
                if receipts:
                    await self._resume(adapter, take, notice, receipts)
        except InboxError as exc:  # the database: one line; they are taken up at the next start
            logger.warning("taking up messages left by a restart failed: %s", exc)
        except Exception:
            logger.exception("taking up messages left by a restart failed")

    async def _resume(
        self, adapter: BaseAdapter, take: Take, notice: Notice, receipts: set[str]
    ) -> None:
        limit = self._settings().sessions.resume_pending_minutes * 60
        given: set[tuple[str, tuple[str, ...], str]] = set()
        """Answers delivered again in this pass (one answer may cover several rows)."""
        resumed: set[tuple[str, ...]] = set()
        """Messages of half answers already being finished in this pass."""
        for row in await asyncio.to_thread(self.inbox.pending, adapter.name):
            if row.receipt not in receipts:
                continue  # it came while this process started: the intake has it
            try:
                read = await adapter.read_again(row.payload)
            except Exception as exc:  # left pending: the next start tries again
                logger.warning(
                    "a pending %s message cannot be read now (%s)", adapter.name, type(exc).__name__
                )
                continue
            if read is None:
                await asyncio.to_thread(self.inbox.done, adapter.name, [row.receipt])
                continue
            # one answer streamed for several messages is finished once: the messages after
            # the first are answered anew (each keeps what it is shown, none overwritten)
            resume = () if row.shown and row.shown in resumed else row.shown
            resumed.add(row.shown)
            msg = replace(read, receipts=(row.receipt,), resume=resume)
            if row.answer is not None:
                key = (msg.chat_id, row.shown, row.answer)
                if key not in given:
                    logger.info("delivering again a %s answer a restart cut", adapter.name)
                    try:
                        await notice(msg, row.answer)
                    except Exception as exc:  # left pending: the next start tries again
                        logger.warning(
                            "a noted answer could not be delivered (%s)", type(exc).__name__
                        )
                        continue
                    given.add(key)
                await self.settle([msg])
                continue
            if self._clock.time() - row.received_at > limit:
                logger.info("a %s message left by a restart is too old to answer", adapter.name)
                with contextlib.suppress(Exception):
                    await notice(msg, t.RESTARTED_UNANSWERED)
                await self.settle([msg])
                continue
            logger.info("answering a %s message left by a restart", adapter.name)
            await take(msg)
            # its session's worker takes it before the next one is handed over: the first
            # message left (the one a turn was answering) is not merged with those behind it
            await asyncio.sleep(0)

"""Sessions when several replicas share one database: one replica ends each, once.

``SharedSessions`` is the ``SessionManager`` of a replica. Which replica runs a
session's turns is decided outside (the session's lease, ``gateway.app``'s
router); here three things change:

- **ending needs the session.** Before a session is ended at its deadline,
  ``claim(key)`` must say this replica holds (or could take) the session. A
  session another live replica holds is forgotten here instead: that replica
  ends it, at the deadline it knows (its turns moved it).
- **every open session is someone's.** ``sweep()`` (run now and then) takes up
  the open sessions of the database this replica does not know, with their
  deadlines; so a session whose replica died is ended by another one, once.
- **a replica that stops ends nothing.** It lets its running turns finish
  (within the timeout) and leaves its sessions to the others, which take them
  up and end them at their deadlines; a rolling restart ends no conversation.
- **a session lost is let go at once.** ``lost(key)``: another replica took the
  session over (this one stalled past its lease); the running turn is cancelled
  and its fence (``FencedError``) keeps anything more from reaching the chat,
  the transcript or the inbox.
- **a session taken over is read afresh.** ``adopt(msg)`` drops what this
  replica knew of the message's session (its turns may have gone on elsewhere)
  and takes the open one from the database, so the conversation goes on in the
  same session, its agent rebuilt from the transcript.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from gateway.events import InboundMessage, SessionKey
from gateway.sessions._expiry import session_deadline
from gateway.sessions._live import LiveSession, live_from_record
from gateway.sessions._manager import SessionManager, _is_chat_profile
from memory.transcripts import SessionRecord

__all__ = ["SharedSessions"]

logger = logging.getLogger(__name__)

Claim = Callable[[SessionKey], Awaitable[bool]]


class SharedSessions(SessionManager):
    def __init__(self, *args: Any, claim: Claim, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.claim = claim
        """Whether this replica may end the session of a key (it holds or takes its lease)."""
        self._platforms: set[str] | None = None
        self._handed_on: set[str] = set()
        """Sessions whose requested end this replica enqueued (once is enough)."""

    async def recover(self, platforms: set[str] | None = None) -> int:
        """Take up every open session (due ones end through the reaper, if claimed)."""
        self._platforms = platforms
        taken = await self.sweep()
        self.reaper.start()
        logger.info("took up %d open sessions", taken)
        return 0

    async def sweep(self) -> int:
        """Take up the open sessions of the database this replica does not know."""
        known = {live.session_id for live in self._open.values()}
        taken = 0
        for record in await self.db.find_open_sessions():
            if record.id in known:
                continue
            if self._platforms is not None and record.platform not in self._platforms:
                continue
            if record.end_reason:  # its end was asked for and may not have been enqueued
                if record.id not in self._handed_on and await self.claim(self.key_of(record)):
                    self._handed_on.add(record.id)
                    self.scheduler.end_session(record.id, record.end_reason)
                    self._ended(record.end_reason)
                continue
            if self._take_up(record):
                taken += 1
        return taken

    def _take_up(self, record: SessionRecord) -> bool:
        key = self.key_of(record)
        if key in self._open:  # another session of the key is live here: it is the one
            return False
        live = live_from_record(key, record)
        deadline, _ = session_deadline(live.started_at, live.last_active, self.settings)
        self._register(live, deadline)
        return True

    def key_of(self, record: SessionRecord) -> SessionKey:
        """The key of the session ``record`` is, as this replica routes its messages."""
        shared = _is_chat_profile(record.user_key)
        return SessionKey(
            record.platform,
            record.chat_id or "",
            None if shared else record.user_id,
            record.thread_id if self.settings.threads == "separate" else None,
        )

    async def _expire(self, session_id: str) -> None:
        live = self.by_id(session_id)
        if live is None:
            return
        due = session_deadline(live.started_at, live.last_active, self.settings)[0]
        idle = not (live.busy or live.pending)
        if idle and due <= self.clock.time() and not await self.claim(live.key):
            logger.debug("session %s is another replica's to end", session_id)
            await self.forget(live)
            return
        await super()._expire(session_id)

    async def forget(self, live: LiveSession) -> None:
        """Drop a session from this replica without ending it (another one has it)."""
        if live.busy or live.pending or live.ending:
            return
        if self._open.get(live.key) is live:
            del self._open[live.key]
        self._by_id.pop(live.session_id, None)
        self._agents.pop(live.key, None)
        self.reaper.cancel(live.session_id)
        agent, live.agent = live.agent, None
        if agent is not None:
            await agent.close()

    async def adopt(self, msg: InboundMessage) -> None:
        """This replica has just taken the message's session: read it afresh."""
        key = self.key_for(msg)
        live = self._open.get(key)
        if live is not None:
            if live.busy or live.pending or live.ending:
                return
            await self.forget(live)
        thread = msg.thread_id if self.settings.threads == "separate" else None
        record = await self.db.open_session_of(
            str(self.profile_key(msg)), msg.platform, msg.chat_id, thread
        )
        if record is not None and not record.end_reason and self._take_up(record):
            taken = self.by_id(record.id)
            if taken is not None:  # the former owner's transcript writes are refused now
                taken.epoch = await self.db.take_epoch(record.id)

    async def shutdown(self, timeout: float) -> None:
        """Stop taking messages and let running turns finish within ``timeout``; end nothing."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        await self._stop_turns(deadline - 0.5)
        for live in list(self._open.values()):
            agent, live.agent = live.agent, None
            if agent is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(agent.close(), max(0.1, deadline - loop.time()))
        await self.turns.drain(deadline - loop.time())
        logger.info("left %d sessions to the other replicas", len(self._open))

    def lost(self, key: SessionKey) -> None:
        """Another replica took the session over: its running turn here stops at once,
        sending nothing more (its fence refuses); the new owner answers."""
        live = self._open.get(key)
        if live is not None and live.cancel_turn():
            logger.info("stopped the turn of session %s: another replica has it", live.session_id)

    def is_open(self, key: SessionKey) -> bool:
        """Whether the key's session is live (or being ended) in this replica."""
        return key in self._open

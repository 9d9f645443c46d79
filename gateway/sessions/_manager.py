"""Live sessions: one agent per SessionKey, one turn at a time per session.

- Messages of one session are processed in order by that session's worker
  task, each batch as one turn of the ``TurnRunner``; sessions run
  concurrently, at most ``sessions.max_concurrent_turns`` answers being written
  at once.
- A message that arrives while its session is busy is never dropped: it waits
  and is merged into the next turn (``sessions.busy: queue``), or it interrupts
  the running turn (``interrupt``). A message whose answer a restart or a
  hand-over left half shown (``resume``) is finished alone (``next_turn``).
- Every open session has a deadline (idle time, daily reset) kept by the
  reaper; expiry never tears down a running turn. Ending a session enqueues
  the ``end_session`` job (flush, providers' ``on_session_end``, end mark).
- At most ``sessions.max_live`` agents stay in memory (LRU, ``_agents``); an evicted agent
  is rebuilt from SessionDB on the next message — eviction does not end it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping

from agent.jobs import JobScheduler
from gateway import _texts as gateway_texts
from gateway import logs
from gateway.adapters import Replies
from gateway.clock import Clock
from gateway.config import SessionsSettings
from gateway.events import InboundMessage, SessionKey
from gateway.sessions import _texts as t
from gateway.sessions._agents import AgentBuilder, PersonDirectory, SessionAgents
from gateway.sessions._expiry import Reaper, session_deadline
from gateway.sessions._live import LiveSession, live_from_record, next_turn
from gateway.sessions._turns import TurnRunner
from memory.errors import MemoryPathError
from memory.paths import UserKey
from memory.transcripts import AsyncSessionDB

logger = logging.getLogger(__name__)

AT_ONCE = 8
"""Sessions opened, and agents built, at once (a burst waits in arrival order)."""
END_RESERVE = 5.0
"""Seconds of a shutdown kept for ending sessions after the turns (at most a third of it)."""


class SessionManager(SessionAgents):
    def __init__(
        self,
        settings: SessionsSettings,
        *,
        builder: AgentBuilder,
        db: AsyncSessionDB,
        scheduler: JobScheduler,
        clock: Clock,
        turns: TurnRunner,
        replies: Replies,
        platform_hints: Mapping[str, str] | None = None,
        on_end: Callable[[str], None] | None = None,
        people: PersonDirectory | None = None,
    ) -> None:
        self.settings = settings
        self.people = people
        """Linked accounts: a linked account's sessions load its person's profile."""
        self.builder = builder
        self.db = db
        self.scheduler = scheduler
        self.clock = clock
        self.turns = turns
        self._replies = replies
        self.platform_hints: Mapping[str, str] = platform_hints or {}
        """Each platform's line for the system prompt, from its adapter."""
        self._on_end = on_end
        self._open: dict[SessionKey, LiveSession] = {}
        self._by_id: dict[str, SessionKey] = {}
        self._agents: OrderedDict[SessionKey, None] = OrderedDict()
        self._renewed: dict[SessionKey, str] = {}
        self._opening = asyncio.Semaphore(AT_ONCE)
        self._building = asyncio.Semaphore(AT_ONCE)
        self._closing = False
        self._ending = 0
        self._locks: dict[SessionKey, asyncio.Lock] = {}
        self.reaper = Reaper(clock, self._expire)

    def reconfigure(self, settings: SessionsSettings) -> None:
        """Apply reloaded ``sessions`` settings: every open session's deadline is retaken."""
        self.settings = settings
        for live in self._open.values():
            if not live.ending:
                self._reschedule(live)

    # ------------------------------------------------------------------ lookup

    def key_for(self, msg: InboundMessage) -> SessionKey:
        thread = msg.thread_id if self.settings.threads == "separate" else None
        user = None if self.settings.scope == "chat" and not msg.is_direct else msg.user_id
        return SessionKey(msg.platform, msg.chat_id, user, thread)

    def profile_key(self, msg: InboundMessage) -> UserKey:
        """Whose USER.md the session loads: the user's, or the chat's own in a shared session."""
        if self.settings.scope == "chat" and not msg.is_direct:
            return UserKey.for_chat(msg.platform, msg.chat_id)
        account = UserKey(msg.platform, msg.user_id)
        if self.people is None:
            return account
        return UserKey.parse(self.people.person_of(str(account)))

    def get(self, msg: InboundMessage) -> LiveSession | None:
        return self._open.get(self.key_for(msg))

    def by_id(self, session_id: str) -> LiveSession | None:
        key = self._by_id.get(session_id)
        return self._open.get(key) if key is not None else None

    @property
    def sessions(self) -> list[LiveSession]:
        return list(self._open.values())

    @property
    def live_agents(self) -> int:
        return len(self._agents)

    # --------------------------------------------------------------- lifecycle

    async def recover(self, platforms: set[str] | None = None) -> int:
        """At start-up: end sessions past their deadline, schedule the rest. Returns ended.

        Only sessions of ``platforms`` (the adapters this process runs) are
        touched, so a console next to a running gateway leaves its sessions alone.
        """
        ended = 0
        for record in await self.db.find_open_sessions():
            if platforms is not None and record.platform not in platforms:
                continue
            last = record.last_active_at or record.started_at
            deadline, reason = session_deadline(record.started_at, last, self.settings)
            if record.end_reason:  # its end was requested before the process stopped
                deadline, reason = self.clock.time(), record.end_reason
            if deadline <= self.clock.time():
                self.scheduler.end_session(record.id, reason)
                self._ended(reason)
                ended += 1
                continue
            shared = _is_chat_profile(record.user_key)
            key = SessionKey(
                record.platform,
                record.chat_id or "",
                None if shared else record.user_id,
                record.thread_id if self.settings.threads == "separate" else None,
            )
            self._register(live_from_record(key, record), deadline)
        self.reaper.start()
        logger.info("recovered sessions; %d ended at start-up", ended)
        return ended

    def _register(self, live: LiveSession, deadline: float | None = None) -> None:
        self._open[live.key] = live
        self._by_id[live.session_id] = live.key
        self._reschedule(live, deadline)

    def _reschedule(self, live: LiveSession, deadline: float | None = None) -> None:
        if deadline is None:
            deadline, _ = session_deadline(live.started_at, live.last_active, self.settings)
        self.reaper.schedule(live.session_id, deadline)

    def _ended(self, reason: str) -> None:
        if self._on_end is not None:
            self._on_end(reason)

    async def submit(self, msg: InboundMessage) -> bool:
        """Queue a message for its session; False when shutting down."""
        if self._closing:
            return False
        key = self.key_for(msg)
        self.builder.warm()
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:  # two messages of one key never open two sessions
            live = await self._session_for(msg)
            live.pending.append(msg)
            if live.busy and self.settings.busy == "interrupt":
                live.cancel_turn()
            if live.worker is None or live.worker.done():
                live.worker = asyncio.create_task(
                    self._work(live), name=f"session-{live.session_id}"
                )
        if not lock.locked() and key not in self._open:
            self._locks.pop(key, None)
        return True

    async def _session_for(self, msg: InboundMessage) -> LiveSession:
        key = self.key_for(msg)
        live = self._open.get(key)
        if live is not None and not live.busy and not live.pending:
            deadline, reason = session_deadline(live.started_at, live.last_active, self.settings)
            if deadline <= self.clock.time():
                await self.end(live, reason)
                live = None
        if live is None:
            now = self.clock.time()
            profile = self.profile_key(msg)
            live = LiveSession(key, uuid.uuid4().hex, profile, msg.chat, now, now, fresh=True)
            live.is_direct = msg.is_direct
            async with self._opening:  # a burst opens sessions a few at a time, in order
                self._register(live)  # the session it follows is found as its agent opens it
                summary = await self._handoff_summary(live, msg)
            renewed = self._renewed.pop(key, None)
            if renewed is not None:
                note = t.RENEWED_NOTICE.get(renewed, "(This is a fresh session.{summary})")
                text = note.format(summary=t.SUMMARY_NOTE if summary else "")
                await self._replies.notice(msg, text)
        return live

    async def _handoff_summary(self, live: LiveSession, msg: InboundMessage) -> str | None:
        if not self.settings.handoff:
            return None
        summary = await self.db.latest_summary(
            str(live.user_key), msg.platform, msg.chat_id, msg.thread_id
        )
        live.handoff = summary
        return summary

    async def drop_agent(self, session_id: str) -> None:
        """Drop the session's agent (if built): the next turn rebuilds it from SessionDB."""
        live = self.by_id(session_id)
        if live is None or live.agent is None:
            return
        agent, live.agent = live.agent, None
        self._agents.pop(live.key, None)
        live.turns_without_agent = agent.turns
        await agent.close()

    async def _work(self, live: LiveSession) -> None:
        logs.bind(session=live.session_id, platform=live.key.platform)  # this task's lines
        while live.pending and not live.ending:
            batch, live.pending = next_turn(live.pending)
            live.taking = True
            try:
                await self.turns.run(live, batch, self.agent_for)  # never raises
            finally:
                live.taking = False
            live.last_active = self.clock.time()
            if live.key in self._open and not live.ending:
                self._reschedule(live)
        if live.expire_after_turn and not live.ending:
            await self._expire(live.session_id)

    async def _expire(self, session_id: str) -> None:
        live = self.by_id(session_id)
        if live is None:
            return
        if live.busy or live.pending:
            live.expire_after_turn = True  # never tear down a turn in progress
            return
        deadline, reason = session_deadline(live.started_at, live.last_active, self.settings)
        if deadline > self.clock.time():
            self._reschedule(live, deadline)
            return
        await self.end(live, reason)

    async def end(self, live: LiveSession, reason: str, *, notify_next: bool = True) -> None:
        """End a session on any path; the ending work runs as a durable background job."""
        if live.ending:
            return
        live.ending = True
        self._ending += 1
        try:
            await self._end(live, reason, notify_next=notify_next)
        finally:
            self._ending -= 1

    @property
    def quiet(self) -> bool:
        """No turn running or waiting and no session being ended."""
        return self._ending == 0 and not any(s.busy or s.pending for s in self._open.values())

    async def _end(self, live: LiveSession, reason: str, *, notify_next: bool) -> None:
        live.cancel_turn()
        if live.worker is not None and live.worker is not asyncio.current_task():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(live.worker), 30)
        leftover, live.pending = live.pending, []
        self._open.pop(live.key, None)
        self._by_id.pop(live.session_id, None)
        lock = self._locks.get(live.key)
        if lock is not None and not lock.locked():
            del self._locks[live.key]
        self._agents.pop(live.key, None)
        self.reaper.cancel(live.session_id)
        if live.agent is not None:
            await live.agent.close()
            live.agent = None
        await self.db.request_end(live.session_id, reason)
        self.scheduler.end_session(live.session_id, reason)
        self._ended(reason)
        if notify_next and reason in t.RENEWED_NOTICE:
            self._renewed[live.key] = reason
        logger.info("session %s ending (%s)", live.session_id, reason)
        for msg in leftover:  # never drop a message: it opens the next session
            if not await self.submit(msg) and not msg.receipts:
                # (a recorded one waits in the inbox for the restart)
                await self._replies.notice(msg, gateway_texts.SHUTTING_DOWN)

    async def reset(self, msg: InboundMessage) -> bool:
        """``/new``: end the sender's session now (a running turn is stopped first)."""
        live = self.get(msg)
        if live is None:
            return False
        await self.end(live, "new", notify_next=False)
        return True

    async def shutdown(self, timeout: float) -> None:
        """Stop taking messages, let running turns finish, end every open session: all of it
        within ``timeout`` seconds. Turns still running then are stopped; a session whose
        ending could not be handed over in time ends at the next start, with reason
        ``shutdown`` (it is recorded first)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        await self._stop_turns(deadline - min(END_RESERVE, timeout / 3))
        sessions = list(self._open.values())
        for live in sessions:  # recorded at once, so recovery knows why they end
            await self.db.request_end(live.session_id, "shutdown")
        ending = [
            asyncio.create_task(self.end(live, "shutdown", notify_next=False)) for live in sessions
        ]
        if ending:
            _, late = await asyncio.wait(ending, timeout=max(0.1, deadline - loop.time()))
            if late:
                logger.warning("%d session(s) end at the next start (reason shutdown)", len(late))
        await self.turns.drain(deadline - loop.time())

    async def _stop_turns(self, until: float) -> None:
        """Take no more messages; let running turns finish until ``until`` (loop time)."""
        loop = asyncio.get_running_loop()
        self._closing = True
        await self.reaper.stop()
        workers = [s.worker for s in self._open.values() if s.worker and not s.worker.done()]
        if workers:
            _, still = await asyncio.wait(workers, timeout=max(0.0, until - loop.time()))
            for task in still:
                task.cancel()
            if still:
                logger.warning("%d answer(s) still running at shutdown were stopped", len(still))


def _is_chat_profile(user_key: str) -> bool:
    try:
        return UserKey.parse(user_key).chat
    except MemoryPathError:
        return False

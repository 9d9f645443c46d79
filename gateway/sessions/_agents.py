"""The agents of live sessions: built on demand (a few at a time), at most
``sessions.max_live`` kept in memory, the least recently used idle ones dropped.

An evicted agent is rebuilt from SessionDB on its session's next message; eviction
does not end the session.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Mapping
from typing import Protocol

from agent.agent import Agent
from agent.context import SessionContext
from gateway.config import SessionsSettings
from gateway.events import SessionKey
from gateway.sessions._live import LiveSession
from memory.paths import UserKey
from memory.people import PERSON_PLATFORM
from memory.transcripts import AsyncSessionDB

logger = logging.getLogger(__name__)


class AgentBuilder(Protocol):
    """Builds the agent of a session (``gateway.app.AgentFactory``)."""

    def agent_for(self, session: SessionContext, *, handoff_summary: str | None = None) -> Agent:
        """A new agent for ``session``; the caller runs ``start()`` on it."""
        ...

    def warm(self) -> None:
        """A turn is coming: open what its first request needs (the LLM connection) while
        it is prepared."""
        ...

    @property
    def needs_parent(self) -> bool:
        """Whether an agent must be told, as it is made, which session a new one follows
        (an external memory provider hears it); else its opening finds it."""
        ...


class PersonDirectory(Protocol):
    """Which accounts are one person (``memory.people.PeopleStore``)."""

    def person_of(self, account: str) -> str:
        """The person key of ``account`` (the account's own key when it is not linked)."""
        ...

    def accounts_of(self, person: str) -> list[str]:
        """Every account of ``person``."""
        ...


class SessionAgents:
    """The agents part of ``SessionManager``; its ``__init__`` sets the state declared here."""

    settings: SessionsSettings
    people: PersonDirectory | None
    builder: AgentBuilder
    db: AsyncSessionDB
    platform_hints: Mapping[str, str]
    _open: dict[SessionKey, LiveSession]
    _agents: OrderedDict[SessionKey, None]
    _building: asyncio.Semaphore

    async def agent_for(self, live: LiveSession) -> Agent:
        """The session's agent, built (or rebuilt from SessionDB after eviction) on demand."""
        if live.agent is None:
            account, search_keys = await self._accounts(live)
            parent = await self._parent(live)
            context = SessionContext(
                platform_hint=self.platform_hints.get(live.chat.platform),
                session_id=live.session_id,
                user_key=live.user_key,
                chat=live.chat,
                is_direct=live.is_direct,
                parent_session_id=parent[0] if parent else None,
                started_because=parent[1] if parent else None,
                follows_previous=True,
                account=account,
                search_keys=search_keys,
            )

            def made() -> Agent:  # one hop off the loop: the agent made and its prompt read
                agent = self.builder.agent_for(context, handoff_summary=live.handoff)
                agent.prepare()
                return agent

            async with self._building:  # a burst builds agents a few at a time, in order
                agent = await asyncio.to_thread(made)
                await agent.start(fresh=live.fresh)
            live.agent = agent
            live.fresh = False
        agent = live.agent
        self._agents[live.key] = None
        self._agents.move_to_end(live.key)
        await self._evict(keep=live.key)
        return agent

    async def _parent(self, live: LiveSession) -> tuple[str, str] | None:
        """``(id, end reason)`` of the session a new one follows, when its agent must know
        it as it is made; else None (its opening finds it, ``follows_previous``)."""
        if not (live.fresh and self.builder.needs_parent):
            return None
        chat = live.chat
        return await self.db.previous_session(
            str(live.user_key), chat.platform, chat.chat_id, chat.thread_id
        )

    async def _accounts(self, live: LiveSession) -> tuple[UserKey | None, tuple[str, ...]]:
        """The account of a session whose profile is a linked person's, and that person's
        accounts (whose transcripts its session search covers too)."""
        if self.people is None or live.user_key.platform != PERSON_PLATFORM:
            return None, ()
        account = UserKey(live.key.platform, live.key.user_id) if live.key.user_id else None
        accounts = await asyncio.to_thread(self.people.accounts_of, str(live.user_key))
        return account, tuple(accounts)

    async def _evict(self, keep: SessionKey) -> None:
        """Drop least recently used idle agents beyond ``max_live`` (never ``keep``'s)."""
        while len(self._agents) > self.settings.max_live:
            victim_key = next(
                (
                    k
                    for k in self._agents
                    if k != keep and k in self._open and not self._open[k].busy
                ),
                None,
            )
            if victim_key is None:
                return
            del self._agents[victim_key]
            victim = self._open[victim_key]
            agent, victim.agent = victim.agent, None
            if agent is not None:
                victim.turns_without_agent = agent.turns
                await agent.close()
            logger.info("evicted idle agent of session %s", victim.session_id)

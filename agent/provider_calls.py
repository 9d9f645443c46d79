"""How a live agent talks to its session's memory providers (``agent_context="primary"``).

One place for every provider call the agent makes during a conversation and for
the jobs it enqueues for the background instance: recall before a turn (bounded,
:mod:`agent.recall`), the sync and cache warm-up after it, the provider tools the
model calls (on the session's own memory: in a session several people share, the
chat's), the reset of a session that follows another, the rewind of ``/undo`` and
``/retry``, compression.
Every provider call runs off the event loop.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agent.context import SessionContext
from agent.jobs import JobScheduler
from agent.recall import Recall
from agent.tracing import current
from agent.tracing.spans import provider_span
from memory.paths import UserKey
from memory.providers import MemoryManager


class ProviderCalls:
    """The provider side of one session's agent."""

    def __init__(
        self,
        memory: MemoryManager,
        session: SessionContext,
        *,
        scheduler: JobScheduler | None,
        prefetch_timeout: float,
    ) -> None:
        self.memory = memory
        self.session = session
        self.scheduler = scheduler
        self.recall = Recall(memory, prefetch_timeout)

    @property
    def _jobs(self) -> JobScheduler | None:
        """The scheduler, when there is an external provider for jobs to call."""
        return self.scheduler if self.memory.external is not None else None

    async def started(self, *, fresh: bool) -> None:
        """A fresh session that follows another one resets the provider (once)."""
        s = self.session
        if fresh and s.parent_session_id:
            await asyncio.to_thread(
                self.memory.on_session_switch,
                s.session_id,
                parent_session_id=s.parent_session_id,
                reset=True,
                reason=s.started_because or "new",
            )

    async def before_turn(self, turn: int, text: str, speaker: UserKey | None) -> str:
        """Turn-start hooks, then the fenced recall for ``text`` (``""`` for none).

        The recall is the session's own, whoever is speaking: in a session several
        people share, the chat's, never the speaker's private memory.
        """
        who = _key_text(speaker)
        with current().span("chorus.recall"):
            with provider_span("on_turn_start"):
                await asyncio.to_thread(
                    self.memory.on_turn_start,
                    turn,
                    text,
                    speaker=who,
                    platform=self.session.platform,
                )
            return await self.recall.for_turn(text, session_id=self.session.session_id)

    def after_turn(self, position: int, text: str) -> None:
        """The turn at ``position`` to the background provider, and its cache warmed, by job."""
        jobs = self._jobs
        if jobs is not None:
            jobs.sync_turn(self.session.session_id, position)
            jobs.queue_prefetch(self.session.session_id, text)

    async def tool(self, name: str, arguments: dict[str, Any], speaker: UserKey | None) -> str:
        """Run a provider tool on the session's own memory, reads and writes alike.

        In a session several people share, that is the chat's store, never the
        speaker's: the result stays in the shared history and reaches every member's
        later requests. Elsewhere the session's own memory is the speaker's.
        """
        with provider_span("handle_tool_call"):
            return await asyncio.to_thread(
                self.memory.handle_tool_call,
                name,
                arguments,
                session_id=self.session.session_id,
                speaker=None if self.shared else _key_text(speaker),
            )

    @property
    def shared(self) -> bool:
        """Whether several people share this session (its memory is the chat's own)."""
        return self.session.user_key.chat

    async def rewound(self, withdrawn: int | None, reason: str, user_text: str = "") -> None:
        """The last turn was undone: drop per-turn state now, withdraw it in order by job
        (``user_text``: its user message, when the transcript no longer holds it)."""
        sid = self.session.session_id
        self.recall.forget()
        await asyncio.to_thread(
            self.memory.on_session_switch, sid, parent_session_id=sid, rewound=True, reason=reason
        )
        jobs = self._jobs
        if jobs is not None and withdrawn:
            jobs.rewind(sid, withdrawn, reason, user_text)

    async def compressed(self) -> None:
        sid = self.session.session_id
        await asyncio.to_thread(
            self.memory.on_session_switch, sid, parent_session_id=sid, reason="compression"
        )


def _key_text(key: UserKey | None) -> str | None:
    """A user key as providers and jobs take it (plain text)."""
    return None if key is None else str(key)

"""``Agent``: the LLM loop one person talks to, for one session.

One turn: user message → LLM ↔ tools until a final answer or
``agent.max_iterations`` → answer. Before every LLM call of a turn the history
is compressed if the request (estimated), or the last one (``prompt_tokens`` as
the endpoint counted it), reached the threshold: a long tool loop is compressed
mid-turn, never sent past the context. The system prompt is built once per
session and stored with it; an agent rebuilt for the session (after eviction or
a restart) reuses the stored one, so the prompt never changes mid-session but by
a compression (``agent.compaction``). The tool calls are run by ``agent.tool_calls``:
``memory`` and ``session_search`` against this session's store and this user's
transcripts, other tools through the providers or the registry. Every
message is appended to SessionDB as it happens. A cancelled turn leaves a
history the API accepts (every tool call answered).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any

from agent.caching import apply_cache_control, caching_enabled
from agent.compaction import Compaction
from agent.compressor import ContextCompressor
from agent.context import AgentConfig, ImageInput, SessionContext
from agent.history import UNDO_MARK, RawTexts, TurnNote, kept_turns, replay
from agent.jobs import JobScheduler
from agent.llm import DeltaCallback, LLMClient, Usage
from agent.messages import ChatMessage, ContentPart, UserMessage, transcript_messages
from agent.others import carries_others
from agent.prompt import build_system_prompt
from agent.provider_calls import ProviderCalls
from agent.shared_writes import SharedWriteGate
from agent.streaming import ContextScrubber, emit, scrubbed
from agent.tool_calls import ToolCalls
from agent.tools.memory_tool import memory_tool_schema
from agent.tools.policy import ToolGate, ToolPolicy, offered_names
from agent.tools.registry import ToolRegistry
from agent.tools.session_search_tool import SESSION_SEARCH_SCHEMA
from agent.transcript_writes import TranscriptWrites
from agent.usage import Charge, Purpose
from memory.paths import UserKey
from memory.providers import MemoryManager, strip_memory_context
from memory.store import MemoryStore
from memory.transcripts import AsyncSessionDB, OpenedSession, PlatformIds

logger = logging.getLogger(__name__)

MAX_ITERATIONS_REPLY = (
    "I stopped after {n} steps without reaching an answer. Tell me to continue, or "
    "narrow the question."
)
NUDGE = (
    "[System note: it has been a while since you saved anything to memory. If this "
    "conversation revealed preferences, corrections or facts worth keeping, save them "
    "with the memory tool.]"
)
__all__ = ["UNDO_MARK", "Agent"]


class Agent(Compaction, ToolCalls, TranscriptWrites):
    """One session's agent. Call ``start()`` once, then ``run_turn()`` per message."""

    def __init__(
        self,
        session: SessionContext,
        *,
        llm: LLMClient,
        store: MemoryStore,
        db: AsyncSessionDB,
        config: AgentConfig | None = None,
        tools: ToolRegistry | None = None,
        handoff_summary: str | None = None,
        memory: MemoryManager | None = None,
        scheduler: JobScheduler | None = None,
        now: Callable[[], float] = time.time,
        shared_writes: SharedWriteGate | None = None,
        tool_gate: ToolGate | None = None,
    ) -> None:
        self.session = session
        self.config = config or AgentConfig()
        self.llm = llm
        self.store = store
        self.db = db
        self.tools = tools or ToolRegistry()
        self.handoff_summary = handoff_summary
        self.memory = memory
        self.scheduler = scheduler
        self.now = now
        self.shared_writes = shared_writes
        # which tools a request offers and a call may use (default: nobody an admin, no audit)
        self.tool_gate = tool_gate or ToolGate(session, ToolPolicy, lambda _: False)
        self._offered: frozenset[str] = frozenset()  # by the last request: nothing else runs
        self.compressor = ContextCompressor(
            llm, self.config.compression, self.config.llm.context_length
        )
        self.history: list[ChatMessage] = []
        self._written = RawTexts()  # what the person wrote, beside history's user messages
        self.usage = Usage()
        self.fence: Callable[[], Awaitable[None]] | None = None
        """Run before every transcript write; raises once this process lost the session
        (another replica took it over). The gateway sets it per turn."""
        self.epoch: int | None = None
        """The session's transcript epoch this process writes with (several replicas);
        the database refuses writes with an older one."""
        self.turns = 0
        self.turns_since_memory = 0
        self.providers = (
            ProviderCalls(
                memory,
                session,
                scheduler=scheduler,
                prefetch_timeout=self.config.memory.prefetch_timeout,
            )
            if memory is not None
            else None
        )
        self._kept: list[int] = []
        """Transcript positions of the turns not undone (see ``agent.history.kept_turns``)."""
        self._positions = 0
        self._speakers: dict[int, str | None] = {}
        """Who wrote the turn at each transcript position (None: not recorded, or several)."""
        self._speaker: UserKey | None = None
        self._system_prompt: str | None = None
        self._note: TurnNote | None = None
        self._reported = 0
        """``prompt_tokens`` of the last LLM call, as the endpoint counted them."""
        self._stalled = False
        """A compression this turn found nothing to summarise: none is tried again in it."""
        self._prepared: list[str] | None = None
        """The prompt's blocks read ahead (``prepare()``), for ``start()``."""
        self._user_sessions = db.for_user(str(session.user_key), also=session.search_keys)

    @property
    def system_prompt(self) -> str:
        if self._system_prompt is None:
            raise RuntimeError("Agent.start() has not been called")
        return self._system_prompt

    def prepare(self) -> None:
        """Read what the system prompt is built from (MEMORY.md and USER.md, the providers'
        blocks) now, for ``start()``: blocking, for a caller that is off the loop already
        (the gateway makes the agent on a worker thread and prepares it there)."""
        self._prepared = self._load_blocks()

    async def start(self, *, fresh: bool = False) -> None:
        """Create (or resume) the session: load the snapshot, rebuild history, build the prompt.

        The memory files and the providers' blocks are read first (one hop off the loop,
        none after ``prepare()``) and the prompt built from them goes with the session's
        opening (one trip to the database); a resumed session keeps the prompt it had
        (its cached prefix).

        ``fresh``: the session was made just now (a new id), so nothing of it is stored
        yet and its opening is not waited for: it is the first write under way, and the
        first turn's request goes out meanwhile (the transcript waits for it, like the
        turn's own message). A memory provider that must hear which session this one
        follows is told before the first turn, so with an external provider the opening
        is waited for."""
        s = self.session
        blocks, self._prepared = self._prepared, None
        if blocks is None:
            blocks = await asyncio.to_thread(self._load_blocks)
        prompt = self._prompt_from(blocks)
        opening = self.db.open_session_ahead(  # made, prompt set, and read back, in one trip
            s.session_id,
            platform=s.platform,
            user_key=str(s.user_key),
            chat_id=s.chat_id,
            thread_id=s.thread_id,
            user_id=s.actor.id,
            model=self.llm.model,
            started_at=self.now(),
            parent_session_id=s.parent_session_id,
            is_direct=s.is_direct,
            system_prompt=prompt,
            follow=s.follows_previous,
        )
        self._system_prompt = prompt
        if fresh and (self.memory is None or self.memory.external is None):
            self._writing = asyncio.ensure_future(self._opened_ahead(opening))
            return
        opened = await opening
        self._opened(opened)
        stored = opened.messages
        transcript = transcript_messages(stored)
        self._kept = kept_turns(transcript)
        users = [m for m in stored if m.role == "user"]
        self._positions = len(users)
        self._speakers = {n: m.speaker for n, m in enumerate(users, 1)}
        self.history = replay(transcript)
        self.turns = sum(1 for m in self.history if m["role"] == "user")
        record = opened.record
        if record is not None and record.system_prompt:  # rebuilt: the session's own prompt
            self._system_prompt = record.system_prompt
        if self.providers is not None:
            await self.providers.started(fresh=not stored)

    async def _opened_ahead(self, opening: Awaitable[OpenedSession]) -> None:
        self._opened(await opening)

    def _opened(self, opened: OpenedSession) -> None:
        """The session as the database opened it: the session it follows, when looked up."""
        if opened.follows is not None and self.session.parent_session_id is None:
            parent, reason = opened.follows
            self.session = replace(self.session, parent_session_id=parent, started_because=reason)
            if self.providers is not None:
                self.providers.session = self.session

    async def _rebuild_system_prompt(self) -> None:
        blocks = await asyncio.to_thread(self._load_blocks)  # one hop off the loop
        self._system_prompt = self._prompt_from(blocks)
        await self.db.set_system_prompt(self.session.session_id, self._system_prompt)

    def _prompt_from(self, blocks: list[str]) -> str:
        return build_system_prompt(
            self.store,
            platform_hint=self.session.platform_hint,
            persona=self.config.agent.persona,
            handoff_summary=self.handoff_summary,
            extra_blocks=blocks,
            targets=self.config.memory.targets,
        )

    def _load_blocks(self) -> list[str]:
        """MEMORY.md and USER.md read from the disk, and the providers' prompt blocks."""
        self.store.load_from_disk()
        return [] if self.memory is None else self.memory.build_system_prompt_blocks()

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The tools a request of this turn offers: the core ones, and the others the tool
        policy lets the turn's person use here."""
        memory = memory_tool_schema(self.config.memory.targets)
        core = [SESSION_SEARCH_SCHEMA] if memory is None else [memory, SESSION_SEARCH_SCHEMA]
        return [*core, *self.tool_gate.offer(self.tool_catalog(), self._speaker)]

    def tool_catalog(self) -> list[dict[str, Any]]:
        """Every tool beyond the core ones this session has, before the policy."""
        provided = self.memory.get_all_tool_schemas() if self.memory is not None else []
        return [*provided, *self.tools.schemas()]

    def build_request(
        self, extra: list[ChatMessage] | None = None, *, cache_markers: bool = True
    ) -> list[ChatMessage]:
        history = self.history if self._note is None else self._note.applied(self.history)
        messages: list[ChatMessage] = [
            {"role": "system", "content": self.system_prompt},
            *history,
            *(extra or []),
        ]
        if cache_markers and caching_enabled(self.config.llm.prompt_caching, self.llm.model):
            return apply_cache_control(messages)
        return messages

    async def run_turn(
        self,
        text: str,
        on_delta: DeltaCallback | None = None,
        images: Sequence[ImageInput] = (),
        speaker: UserKey | None = None,
        others_content: bool = False,
        platform_message_id: PlatformIds = None,
    ) -> str:
        """Answer one user message. Raises ``LLMError`` when the model cannot be reached (the
        message stays in the transcript); re-raises cancellation.

        ``images`` (for models with vision) go with the text as image parts; the
        transcript records that they were there, not their bytes. ``speaker`` is
        the user key of who wrote it, in a session several people share;
        ``others_content``: the text carries words its owner did not write;
        ``platform_message_id``: its platform id (or its merged parts'), stored with it.
        """
        if self._system_prompt is None:
            await self.start()
        self._speaker = speaker
        if self.shared_writes is not None:
            self.shared_writes.speaker = speaker
        self._others(others_content or carries_others(text), turn=True)
        resuming = self._unanswered(text)
        self._stalled = False
        self.compressor.charge = self.charge("compression")
        if not resuming:
            await self._maybe_compress([{"role": "user", "content": text}])
            self.turns += 1
            self.turns_since_memory += 1
        note = await self._recalled_context(text)
        interval = self.config.memory.nudge_interval
        if interval and self.config.memory.targets and self.turns_since_memory >= interval:
            note = f"{note}\n\n{NUDGE}"
            self.turns_since_memory = 0
        stored = text
        user_content: str | list[ContentPart] = text
        if images:
            user_content = [{"type": "text", "text": text}, *(i.part() for i in images)]
            stored = f"{text}\n[{len(images)} image(s)]".strip()
        message: UserMessage = {"role": "user", "content": user_content}
        self._written.keep(message, text)
        self._note = TurnNote(message, note)  # this turn's requests only, never the history
        if resuming:  # asked before a restart cut the answer: answer it, don't ask it twice
            self.history[-1] = message
        else:
            await self._append_ahead(
                message, stored_content=stored, speaker=speaker, platform_id=platform_message_id
            )
            self._positions += 1
            self._kept.append(self._positions)
            self._speakers[self._positions] = None if speaker is None else str(speaker)
        try:
            answer = await self._loop(on_delta)
            self._after_turn(text)
            return answer
        except asyncio.CancelledError:
            await asyncio.shield(self._answer_dangling_tool_calls())
            raise
        finally:
            self._note = None
            await self._written_ahead()

    def _unanswered(self, text: str) -> bool:
        """The history ends with this very message and no answer to it (a restart cut it)."""
        if not self.history:
            return False
        last = self.history[-1]
        return last["role"] == "user" and self._written.text(last) == text

    async def _recalled_context(self, text: str) -> str:
        """Provider hooks at turn start, and their recall for this message, fenced."""
        if self.providers is None:
            return ""
        return await self.providers.before_turn(self.turns, text, self._speaker)

    def _after_turn(self, text: str) -> None:
        if self.providers is not None:
            self.providers.after_turn(self._positions, text)

    async def _loop(self, on_delta: DeltaCallback | None) -> str:
        limit = self.config.agent.max_iterations
        for _ in range(limit):
            scrubber = ContextScrubber()
            shown = scrubbed(on_delta, scrubber) if on_delta is not None else None
            await self._maybe_compress()
            tools = self.tool_schemas()
            self._offered = offered_names(tools)
            response = await self.llm.complete(
                self.build_request(), tools=tools, on_delta=shown, charge=self.charge("turn")
            )
            if on_delta is not None:
                await emit(on_delta, scrubber.finish())
            message = response.to_message()
            if isinstance(content := message["content"], str):  # recalled context echoed back
                message["content"] = strip_memory_context(content)
            await self._written_ahead()  # the turn's message is in the transcript first
            await self._stored(  # in one commit: the usage, then the answer
                self._record_usage(response),
                self._append(message, finish_reason=response.finish_reason),
            )
            if not response.tool_calls:
                return strip_memory_context(response.content)
            for call in response.tool_calls:
                result = await self._run_tool(call)
                await self._append(
                    {"role": "tool", "tool_call_id": call.id, "content": result},
                    tool_name=call.name,
                )
        reply = MAX_ITERATIONS_REPLY.format(n=limit)
        await self._append({"role": "assistant", "content": reply})
        return reply

    def charge(self, purpose: Purpose) -> Charge:
        """Whom this session's LLM calls are charged to: who wrote the turn (in a shared
        session), else the session's own user key."""
        person = self._speaker if self._speaker is not None else self.session.user_key
        chat = f"{self.session.platform}:{self.session.chat_id}"
        return Charge(str(person), self.session.session_id, purpose, chat)

    async def close(self) -> None:
        """Release the session's providers (the agent is being dropped, not the session)."""
        try:
            await self._written_ahead()  # a fresh session's opening no turn has waited for
        except Exception as exc:
            logger.warning("session %s could not be stored (%s)", self.session.session_id, exc)
        if self.memory is not None:
            await asyncio.to_thread(self.memory.shutdown_all)

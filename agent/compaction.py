"""How an agent keeps its conversation within the model's context: the memory flush,
and the seed's preflight compression before every LLM call of a turn.

``Compaction`` is a part of ``agent.Agent`` (its base class): it works on the
agent's history, its compressor and its providers, and rebuilds the system
prompt after a compression, the one time the prompt of a session changes.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import TYPE_CHECKING, Any

from agent.compressor import Compressed, ContextCompressor, estimate_tokens
from agent.context import AgentConfig, SessionContext
from agent.flush import flush_memories
from agent.history import RawTexts, TurnNote
from agent.llm import LLMClient
from agent.messages import ChatMessage, as_plain
from agent.others import history_carries_others
from agent.provider_calls import ProviderCalls
from agent.shared_writes import SharedWriteGate
from agent.tools.memory_tool import memory_tool_schema
from agent.tools.policy import ToolGate
from agent.usage import Charge, Purpose
from memory.providers import MemoryManager

__all__ = ["Compaction"]

logger = logging.getLogger(__name__)


class Compaction:
    """The flush and the compression of one session's agent."""

    session: SessionContext
    config: AgentConfig
    llm: LLMClient
    memory: MemoryManager | None
    providers: ProviderCalls | None
    shared_writes: SharedWriteGate | None
    tool_gate: ToolGate
    compressor: ContextCompressor
    history: list[ChatMessage]
    _written: RawTexts
    _note: TurnNote | None
    _reported: int
    """``prompt_tokens`` of the last LLM call, as the endpoint counted them."""
    _stalled: bool
    """A compression this turn found nothing to summarise: none is tried again in it."""
    _system_prompt: str | None

    if TYPE_CHECKING:  # the agent's own, used here

        @property
        def system_prompt(self) -> str: ...

        async def start(self) -> None: ...

        async def _written_ahead(self) -> None: ...

        def charge(self, purpose: Purpose) -> Charge: ...

        async def _rebuild_system_prompt(self) -> None: ...

        async def run_memory(self, arguments: dict[str, Any], origin: str = "tool") -> str: ...

        def build_request(
            self, extra: list[ChatMessage] | None = None, *, cache_markers: bool = True
        ) -> list[ChatMessage]: ...

    async def flush(self, min_turns: int | None = None) -> int:
        """``flush_memories`` over this session's history; returns memory writes made."""
        if self._system_prompt is None:
            await self.start()
        turns = self.config.memory.flush_min_turns if min_turns is None else min_turns
        schema = memory_tool_schema(self.config.memory.targets)
        if schema is None:  # memory and the profile both switched off: nothing to save
            return 0
        self._others(history_carries_others(self.history))
        return await flush_memories(
            self.history,
            turns,
            llm=self.llm,
            system_prompt=self.system_prompt,
            run_memory=functools.partial(self.run_memory, origin="flush"),
            schema=schema,
            refuse=functools.partial(self.tool_gate.not_offered, speaker=None),
            charge=self.charge("flush"),
        )

    def _others(self, present: bool, *, turn: bool = False) -> None:
        """Others' content is in this turn (``turn``: it starts, with or without it)."""
        if (gate := self.shared_writes) is not None:
            gate.others_content = present or (gate.others_content and not turn)

    async def _maybe_compress(self, pending: list[ChatMessage] | None = None) -> None:
        """The seed's preflight, before every LLM call: compress when the request about to
        go (estimated, with ``pending``) or the last one (as the endpoint counted it)
        reached the threshold."""
        if self._stalled:
            return
        estimate = estimate_tokens(self.build_request(pending, cache_markers=False))
        reported = self._reported
        if not self.compressor.should_compress(max(estimate, reported)):
            return
        await self._written_ahead()  # the transcript has the turn's message before the rest
        sid = self.session.session_id
        logger.info("compressing session %s at ~%d tokens (%d reported)", sid, estimate, reported)
        self._reported = 0
        done = self.compressor.compressions
        await self.flush(min_turns=0)
        notes = ""
        if self.memory is not None:
            notes = await asyncio.to_thread(self.memory.on_pre_compress, as_plain(self.history))
        compressed = await self.compressor.compress_with_origins(self.history, notes)
        self._written.carry(self.history, compressed.messages, compressed.origins)
        self._carry_note(compressed)
        self.history = compressed.messages
        self._stalled = self.compressor.compressions == done
        await self._rebuild_system_prompt()
        if self.providers is not None:
            await self.providers.compressed()

    def _carry_note(self, compressed: Compressed) -> None:
        """The turn's note follows its message into the compressed history (if kept)."""
        note = self._note
        if note is None:
            return
        old = next((i for i, m in enumerate(self.history) if m is note.message), None)
        pairs = zip(compressed.messages, compressed.origins, strict=True)
        message = next((m for m, o in pairs if o == old), None) if old is not None else None
        self._note = TurnNote(message, note.text) if message and message["role"] == "user" else None

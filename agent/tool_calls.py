"""How an agent runs the tool calls of its model: ``memory`` against the session's
store (through the shared-memory gate), ``session_search`` over the person's own
transcripts, a provider's tools through its providers, any other through the tool
registry — each call after the tool gate (``agent.tools.policy``) let it through:
a tool not offered in the request, or not allowed to the turn's person, never runs.
What a tool other than ``memory`` returns is others' content.

``ToolCalls`` is a part of ``agent.Agent`` (its base class).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent.context import AgentConfig, SessionContext
from agent.llm import ToolCallRequest, parse_arguments
from agent.memory_writes import apply_memory_call
from agent.provider_calls import ProviderCalls
from agent.shared_writes import SharedWriteGate
from agent.tools.policy import ToolGate
from agent.tools.registry import ToolRegistry, tool_error
from agent.tools.session_search_tool import run_session_search
from agent.tracing.spans import tool_outcome, tool_span
from memory.paths import UserKey
from memory.providers import MemoryManager
from memory.store import MemoryStore
from memory.transcripts import AsyncUserSessions

__all__ = ["ToolCalls"]


class ToolCalls:
    """The tool side of one session's agent."""

    session: SessionContext
    config: AgentConfig
    store: MemoryStore
    tools: ToolRegistry
    memory: MemoryManager | None
    providers: ProviderCalls | None
    shared_writes: SharedWriteGate | None
    tool_gate: ToolGate
    _offered: frozenset[str]
    turns_since_memory: int
    _speaker: UserKey | None
    _user_sessions: AsyncUserSessions

    if TYPE_CHECKING:  # the agent's own, used here

        def _others(self, present: bool, *, turn: bool = False) -> None: ...

    async def _run_tool(self, call: ToolCallRequest) -> str:
        """The one place a model's tool call runs (traced: ``execute_tool <name>``)."""
        with tool_span(call.name, call.id, call.arguments) as span:
            result = await self._dispatch_tool(call)
            span.set("chorus.outcome", tool_outcome(result))
            return result

    async def _dispatch_tool(self, call: ToolCallRequest) -> str:
        """The tool policy is asked first, every time; then the tool runs."""
        refusal = await self.tool_gate.refusal(
            call.name, self._offered, self._speaker, call.arguments
        )
        if refusal is not None:
            return refusal
        provider_tool = self.memory is not None and self.memory.has_tool(call.name)
        if call.name != "memory":  # what a tool returns is others' content
            self._others(True)
        if call.name not in ("memory", "session_search") and not provider_tool:
            person = self.tool_gate.person(self._speaker)
            caller = None if person is None else str(person)
            return await self.tools.dispatch(call.name, call.arguments, caller)
        try:
            arguments = parse_arguments(call.arguments)
        except ValueError as exc:
            return tool_error(f"{call.name}: {exc}")
        if call.name == "memory":
            return await self.run_memory(arguments)
        if call.name == "session_search":
            return await run_session_search(
                self._user_sessions, arguments, current_session_id=self.session.session_id
            )
        assert self.providers is not None
        return await self.providers.tool(call.name, arguments, self._speaker)

    async def run_memory(self, arguments: dict[str, Any], origin: str = "tool") -> str:
        """Apply one memory tool call to this session's store; resets the nudge counter.

        ``origin`` (``tool`` or ``flush``) is told to the providers with the write."""
        write = await apply_memory_call(
            arguments,
            store=self.store,
            shared_writes=self.shared_writes,
            memory=self.memory,
            targets=self.config.memory.targets,
            origin=origin,
            session_id=self.session.session_id,
        )
        if write.success:
            self.turns_since_memory = 0
        return write.text

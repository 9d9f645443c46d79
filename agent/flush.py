"""``flush_memories``: one last chance to save what matters, leaving no trace.

The seed's sentinel procedure: a ``[System: …]`` user message is appended to
the history as the sentinel, one LLM call is made that offers only the memory
tool, its memory calls are applied, and then everything from the end of the
history back to (and including) that very message (the object, not an equal
one) is removed — whatever happened in between, errors included.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agent.errors import LLMError
from agent.llm import LLMClient, parse_arguments
from agent.messages import ChatMessage, SystemMessage, UserMessage
from agent.tools.memory_tool import MEMORY_TOOL_SCHEMA
from agent.usage import Charge

logger = logging.getLogger(__name__)

FLUSH_PROMPT = (
    "[System: The session is ending or being compressed. Save anything worth "
    "remembering with the memory tool — prioritize user preferences, corrections, and "
    "recurring patterns over task-specific details. If nothing is worth saving, reply "
    "with a short 'nothing to save'.]"
)

MemoryRunner = Callable[[dict[str, Any]], Awaitable[str]]
"""Applies one memory tool call (already parsed arguments) and returns its JSON result."""

Refuser = Callable[[str], Awaitable[str]]
"""The result for a call to a tool the flush did not offer (by its name), audited."""


def count_user_turns(messages: Sequence[ChatMessage]) -> int:
    return sum(1 for msg in messages if msg.get("role") == "user")


async def flush_memories(
    messages: list[ChatMessage],
    min_turns: int = 6,
    *,
    llm: LLMClient,
    system_prompt: str,
    run_memory: MemoryRunner,
    schema: dict[str, Any] = MEMORY_TOOL_SCHEMA,
    refuse: Refuser | None = None,
    charge: Charge | None = None,
) -> int:
    """Give the model one memory-only call over ``messages``; returns memory writes made.

    ``schema`` is the memory tool as the session offers it (its targets switched on);
    a call to any other tool is refused, by ``refuse`` when given (which audits it).

    ``messages`` is the live history (without the system message); it is the
    same list, with the same contents, when this returns or raises.
    """
    if count_user_turns(messages) < min_turns or not messages:
        return 0
    sentinel: UserMessage = {"role": "user", "content": FLUSH_PROMPT}
    messages.append(sentinel)
    writes = 0
    try:
        system: SystemMessage = {"role": "system", "content": system_prompt}
        request = [system, *messages]
        try:
            response = await llm.complete(
                request, tools=[schema], model=llm.auxiliary_model, charge=charge
            )
        except LLMError as exc:
            logger.warning("memory flush skipped: %s", exc)
            return 0
        messages.append(response.to_message())
        for call in response.tool_calls:
            if call.name != "memory" and refuse is not None:
                result = await refuse(call.name)
            elif call.name != "memory":
                result = json.dumps({"success": False, "error": "only memory is available"})
            else:
                try:
                    result = await run_memory(parse_arguments(call.arguments))
                    writes += 1 if json.loads(result).get("success") else 0
                except ValueError as exc:
                    result = json.dumps({"success": False, "error": str(exc)})
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        logger.info("memory flush made %d write(s)", writes)
        return writes
    finally:
        _remove_through_sentinel(messages, sentinel)


def _remove_through_sentinel(messages: list[ChatMessage], sentinel: UserMessage) -> None:
    if not any(msg is sentinel for msg in messages):
        return
    while messages:
        if messages.pop() is sentinel:
            return

"""One memory tool call applied to a session's store, the same for a turn and a flush.

The call is validated (``resolve_memory_call``: a target switched off by
``memory.memory_enabled`` / ``memory.user_profile_enabled`` is refused), passed
through the shared MEMORY.md gate (``memory.shared_writes``), applied to the
store, and a write that landed is told to the session's providers
(``on_memory_write``) with the seed's metadata (``write_metadata``) and, when
it changed something shared, recorded in the audit log.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent.shared_writes import SharedWriteGate
from agent.tools.memory_tool import (
    TARGETS,
    MemoryCall,
    MemoryCallError,
    memory_error_text,
    memory_result_text,
    resolve_memory_call,
    run_memory_tool,
)
from memory.providers import MemoryManager
from memory.store import MemoryStore

__all__ = ["MemoryWrite", "apply_memory_call", "write_metadata"]


@dataclass(frozen=True)
class MemoryWrite:
    """What one memory call came to: the tool result for the model, and whether it succeeded."""

    text: str
    success: bool


def write_metadata(
    action: str,
    target: str,
    old_text: str,
    *,
    speaker: str | None,
    agent_context: str,
    origin: str,
    session_id: str,
) -> dict[str, Any]:
    """What ``on_memory_write`` gets beside ``(action, target, content)``.

    ``old_text`` (replace and remove: the text that picked the entry), ``speaker``
    (who wrote the message that led to the write; None when not known),
    ``target``, ``agent_context`` (the provider's: ``primary`` in a live agent,
    ``flush`` for the session-end flush and approvals),
    ``origin`` (``tool``: the model's call in a turn; ``flush``; ``review``: an
    admin approved a staged write) and ``session_id``.
    """
    metadata: dict[str, Any] = {
        "target": target,
        "agent_context": agent_context,
        "origin": origin,
        "session_id": session_id,
    }
    if action in ("replace", "remove"):
        metadata["old_text"] = old_text
    if speaker is not None:
        metadata["speaker"] = speaker
    return metadata


async def apply_memory_call(
    arguments: dict[str, Any],
    *,
    store: MemoryStore,
    shared_writes: SharedWriteGate | None,
    memory: MemoryManager | None,
    targets: Sequence[str] = TARGETS,
    context: str = "primary",
    origin: str = "tool",
    session_id: str = "",
) -> MemoryWrite:
    """Apply one memory tool call (already parsed arguments) to ``store``.

    ``targets`` are those switched on; ``context`` and ``origin`` go to the
    providers in the write's metadata, with the gate's speaker.
    """
    try:
        call = resolve_memory_call(arguments, targets)
    except MemoryCallError as exc:
        return MemoryWrite(memory_error_text(exc), False)
    if shared_writes is not None:
        held = await shared_writes.intercept(store, call)
        if held is not None:
            return MemoryWrite(json.dumps(held, ensure_ascii=False), bool(held["success"]))
    result = await run_memory_tool(store, call)
    if result["success"] and shared_writes is not None:
        await shared_writes.record(call, "ok")
    if result["success"] and memory is not None:
        speaker = shared_writes.writer if shared_writes is not None else None
        metadata = write_metadata(
            call.action,
            call.target,
            call.old_text,
            speaker=None if speaker is None else str(speaker),
            agent_context=context,
            origin=origin,
            session_id=session_id,
        )
        await mirror_write(memory, call, metadata)
    return MemoryWrite(memory_result_text(result), bool(result["success"]))


async def mirror_write(memory: MemoryManager, call: MemoryCall, metadata: dict[str, Any]) -> None:
    """Tell the providers a write landed: the new text (a removal's: its ``old_text``)."""
    content = call.content or call.old_text
    await asyncio.to_thread(memory.on_memory_write, call.action, call.target, content, metadata)

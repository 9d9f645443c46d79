"""One memory tool call applied to a session's store, the same for a turn and a flush.

The call is validated (``resolve_memory_call``), passed through the shared
MEMORY.md gate (``memory.shared_writes``), applied to the store, and a write
that landed is told to the session's providers (``on_memory_write``) and, when
it changed the shared MEMORY.md, recorded in the audit log.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from agent.shared_writes import SharedWriteGate
from agent.tools.memory_tool import (
    MemoryCallError,
    memory_error_text,
    memory_result_text,
    resolve_memory_call,
    run_memory_tool,
)
from memory.providers import MemoryManager
from memory.store import MemoryStore

__all__ = ["MemoryWrite", "apply_memory_call"]


@dataclass(frozen=True)
class MemoryWrite:
    """What one memory call came to: the tool result for the model, and whether it succeeded."""

    text: str
    success: bool


async def apply_memory_call(
    arguments: dict[str, Any],
    *,
    store: MemoryStore,
    shared_writes: SharedWriteGate | None,
    memory: MemoryManager | None,
) -> MemoryWrite:
    """Apply one memory tool call (already parsed arguments) to ``store``."""
    try:
        call = resolve_memory_call(arguments)
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
        await asyncio.to_thread(
            memory.on_memory_write, call.action, call.target, call.content or call.old_text
        )
    return MemoryWrite(memory_result_text(result), bool(result["success"]))

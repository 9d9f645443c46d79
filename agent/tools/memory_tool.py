"""The ``memory`` tool: one tool, three actions, two targets (the seed's design).

The agent intercepts calls to it and runs them against its own session's
``MemoryStore`` — the shared MEMORY.md and this user's USER.md — so no call can
reach another user's profile.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent.tools.registry import function_schema
from memory.store import MemoryResult, MemoryStore

MEMORY_TOOL_DESCRIPTION = (
    "Save durable information to persistent memory that survives across sessions. "
    "Memory is injected into future sessions' system prompts, so keep entries short, "
    "factual and useful.\n"
    "WHEN TO SAVE (do this proactively, don't wait to be asked):\n"
    "- The user corrects you or says 'remember this' / 'don't do that again'\n"
    "- The user shares a preference, habit, or personal detail (name, role, time zone, "
    "communication style)\n"
    "- You learn a stable fact about the environment, a convention or a quirk worth "
    "knowing next time\n"
    "PRIORITY: user preferences and corrections > environment facts > procedural knowledge.\n"
    "DO NOT SAVE task progress, session outcomes, completed-work logs or temporary TODO "
    "state; session_search recalls those from past transcripts.\n"
    "TWO TARGETS:\n"
    "- 'user': who the user is -- name, role, preferences, communication style, pet peeves\n"
    "- 'memory': your notes -- environment facts, project conventions, tool quirks, "
    "lessons learned (shared by everyone you talk to: never put one user's private "
    "details here)\n"
    "ACTIONS: 'add' a new entry (content); 'replace' the one entry containing old_text "
    "with content; 'remove' the one entry containing old_text. Each target has a "
    "character limit; when it is nearly full, consolidate by replacing or removing "
    "entries before adding."
)

MEMORY_TOOL_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["add", "replace", "remove"]},
        "target": {"type": "string", "enum": ["memory", "user"]},
        "content": {"type": "string", "description": "The entry text, for add and replace."},
        "old_text": {
            "type": "string",
            "description": "A unique part of the entry to replace or remove.",
        },
    },
    "required": ["action", "target"],
}

MEMORY_TOOL_SCHEMA = function_schema("memory", MEMORY_TOOL_DESCRIPTION, MEMORY_TOOL_PARAMETERS)


TARGETS = ("memory", "user")
TARGET_OFF = "the target {target!r} is switched off here; nothing was saved"

_TARGET_LINES = {
    "user": "- 'user': who the user is",
    "memory": "- 'memory': your notes",
}


def memory_tool_schema(targets: Sequence[str] = TARGETS) -> dict[str, Any] | None:
    """The memory tool offering only ``targets`` (``memory.memory_enabled`` and
    ``memory.user_profile_enabled``); None when both are off: no memory tool."""
    if tuple(targets) == TARGETS:
        return MEMORY_TOOL_SCHEMA
    if not targets:
        return None
    parameters = copy.deepcopy(MEMORY_TOOL_PARAMETERS)
    parameters["properties"]["target"]["enum"] = list(targets)
    off = [line for target, line in _TARGET_LINES.items() if target not in targets]
    kept = [
        line
        for line in MEMORY_TOOL_DESCRIPTION.split("\n")
        if not any(line.startswith(prefix) for prefix in off)
    ]
    description = "\n".join(kept).replace("TWO TARGETS:", "ONE TARGET:")
    return function_schema("memory", description, parameters)


ACTIONS = ("add", "replace", "remove")


@dataclass(frozen=True)
class MemoryCall:
    """One validated memory tool call: the target is resolved once, here, for every policy."""

    action: str
    target: str
    content: str
    old_text: str


class MemoryCallError(ValueError):
    """The arguments do not name a valid action and target."""


def resolve_memory_call(arguments: dict[str, Any], targets: Sequence[str] = TARGETS) -> MemoryCall:
    """Validate a call strictly; a missing (absent or null) target means ``memory``.

    A target switched off (not in ``targets``) is refused with a message saying so.

    Only the strings ``"user"`` and ``"memory"`` are targets: ``""``, ``false``,
    ``0``, ``"MEMORY"`` and anything else is refused, so no odd value can slip
    past the shared-memory policy and be defaulted afterwards.
    """
    action = arguments.get("action")
    if not isinstance(action, str) or action not in ACTIONS:
        raise MemoryCallError(f"unknown action {action!r}; use add, replace or remove")
    raw_target = arguments.get("target")
    target = "memory" if raw_target is None else raw_target
    if not isinstance(target, str) or target not in TARGETS:
        raise MemoryCallError(f"unknown target {raw_target!r}; use 'memory' or 'user'")
    if target not in targets:
        raise MemoryCallError(TARGET_OFF.format(target=target))
    return MemoryCall(
        action=action,
        target=target,
        content=_text(arguments.get("content")),
        old_text=_text(arguments.get("old_text")),
    )


def _text(value: object) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


async def run_memory_tool(store: MemoryStore, call: MemoryCall) -> MemoryResult:
    """Apply one validated call to the store."""
    if call.action == "add":
        return await asyncio.to_thread(store.add, call.target, call.content)
    if call.action == "replace":
        return await asyncio.to_thread(store.replace, call.target, call.old_text, call.content)
    return await asyncio.to_thread(store.remove, call.target, call.old_text)


def memory_error_text(error: MemoryCallError) -> str:
    """The JSON the model gets back for a call that names no valid action or target."""
    return json.dumps({"success": False, "error": str(error)}, ensure_ascii=False)


def memory_result_text(result: MemoryResult) -> str:
    """The JSON the model gets back."""
    return json.dumps(dict(result), ensure_ascii=False)

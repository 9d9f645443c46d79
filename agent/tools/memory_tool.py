"""The ``memory`` tool: one tool, three actions, two targets (the seed's design).

The agent intercepts calls to it and runs them against its own session's
``MemoryStore`` — the shared MEMORY.md and this user's USER.md — so no call can
reach another user's profile.
"""

from __future__ import annotations

import asyncio
import json
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


async def run_memory_tool(store: MemoryStore, arguments: dict[str, Any]) -> MemoryResult | None:
    """Apply one call; None when the arguments cannot name a valid action."""
    action = arguments.get("action")
    target = str(arguments.get("target") or "memory")
    content = arguments.get("content")
    old_text = arguments.get("old_text")
    if action == "add":
        return await asyncio.to_thread(store.add, target, str(content or ""))
    if action == "replace":
        return await asyncio.to_thread(
            store.replace, target, str(old_text or ""), str(content or "")
        )
    if action == "remove":
        return await asyncio.to_thread(store.remove, target, str(old_text or ""))
    return None


def memory_result_text(result: MemoryResult | None, action: object) -> str:
    """The JSON the model gets back."""
    if result is None:
        payload: dict[str, Any] = {
            "success": False,
            "error": f"unknown action {action!r}; use add, replace or remove",
        }
    else:
        payload = dict(result)
    return json.dumps(payload, ensure_ascii=False)

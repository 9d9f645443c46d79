"""Pure edits and reads of an agent's message history (OpenAI chat format)."""

from __future__ import annotations

from typing import Any

__all__ = ["drop_last_turn", "unanswered_tool_calls"]


def drop_last_turn(history: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Remove the last user message and everything after it; returns that message."""
    for index in range(len(history) - 1, -1, -1):
        if history[index].get("role") == "user":
            message = history[index]
            del history[index:]
            return message
    return None


def unanswered_tool_calls(history: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """``(call id, tool name)`` of every tool call in ``history`` with no result yet, in order."""
    answered = {m.get("tool_call_id") for m in history if m.get("role") == "tool"}
    missing: list[tuple[str, str]] = []
    for message in history:
        for call in message.get("tool_calls") or []:
            if call["id"] not in answered:
                answered.add(call["id"])
                missing.append((call["id"], call["function"]["name"]))
    return missing

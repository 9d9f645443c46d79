"""Pure edits and reads of an agent's message history (OpenAI chat format)."""

from __future__ import annotations

from typing import Any

__all__ = [
    "UNDO_MARK",
    "drop_last_turn",
    "kept_turns",
    "replay",
    "turn_messages",
    "unanswered_tool_calls",
]

UNDO_MARK = "[undo: the last turn was withdrawn by the user]"
"""Recorded in the transcript by /undo; history rebuilt from it drops that turn."""


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


def is_undo_mark(message: dict[str, Any]) -> bool:
    return message.get("role") == "system" and message.get("content") == UNDO_MARK


def kept_turns(transcript: list[dict[str, Any]]) -> list[int]:
    """Positions (1-based, over every user message ever stored) of the turns not undone.

    A turn's position never changes: /undo records a mark instead of deleting,
    so turn 3 stays turn 3 after turn 2 is withdrawn, and the turn after an
    undo gets the next position, never an old one.
    """
    kept: list[int] = []
    position = 0
    for message in transcript:
        if message.get("role") == "user":
            position += 1
            kept.append(position)
        elif is_undo_mark(message) and kept:
            kept.pop()
    return kept


def turn_messages(transcript: list[dict[str, Any]], position: int) -> list[dict[str, Any]]:
    """The messages of the turn at ``position`` (see :func:`kept_turns`), user message first."""
    seen = 0
    start = None
    for index, message in enumerate(transcript):
        if message.get("role") != "user":
            continue
        seen += 1
        if seen == position:
            start = index
        elif start is not None:
            return [m for m in transcript[start:index] if not is_undo_mark(m)]
    if start is None:
        return []
    return [m for m in transcript[start:] if not is_undo_mark(m)]


def replay(transcript: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation a transcript holds: undone turns dropped, system records left out."""
    history: list[dict[str, Any]] = []
    for message in transcript:
        if is_undo_mark(message):
            drop_last_turn(history)
        elif message.get("role") != "system":
            history.append(message)
    return history

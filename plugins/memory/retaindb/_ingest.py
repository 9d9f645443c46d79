"""The messages of an ended session, split by who said them, as RetainDB ingests them.

``POST /v1/memory/ingest/session`` takes ``messages`` of ``{"role", "content"}``.
Only the conversation goes: user and assistant messages with text (recalled
memory context stripped), no system prompt and no tool traffic. In a group a
user message carries its writer as ``speaker``; it goes to that person's
memory, and the assistant's answers go with the person they answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memory.providers import strip_memory_context


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts: keep the text ones
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def by_speaker(
    messages: list[dict[str, Any]], default: str, resolve: Callable[[Any], str]
) -> dict[str, list[dict[str, str]]]:
    """``{user id: messages}`` in the order said; ``resolve`` turns a speaker into a user id."""
    split: dict[str, list[dict[str, str]]] = {}
    current = default
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role not in ("user", "assistant"):
            continue
        text = strip_memory_context(_text(message.get("content"))).strip()
        if not text:
            continue
        if role == "user":
            try:
                current = resolve(message.get("speaker"))
            except ValueError:  # a malformed speaker: the session's own user
                current = default
        split.setdefault(current, []).append({"role": str(role), "content": text})
    return split

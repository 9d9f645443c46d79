"""Text the provider sends to Hindsight (a session's document) and shows the model (recall).

A document is the plain transcript of one part of one session, a line per
message, labelled ``User:``/``Assistant:`` so Hindsight's fact extraction
knows who said what; its id (``chorus-<session>-<part>``) is stable, so
retaining a part twice replaces it rather than adding it again.
"""

from __future__ import annotations

from datetime import UTC, datetime

from ._buffer import Part, Turn
from ._client import Memory

MAX_LINE = 500


def iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")


def document_id(part: Part) -> str:
    return f"chorus-{part.session_id}-{part.number}"


def document(turns: list[Turn]) -> str:
    lines: list[str] = []
    for turn in turns:
        if turn.user:
            lines.append(f"User: {turn.user}")
        if turn.assistant:
            lines.append(f"Assistant: {turn.assistant}")
    return "\n".join(lines)


def context(platform: str) -> str:
    where = f" on {platform}" if platform else ""
    return f"a conversation between the user and their AI assistant{where} (chorus)"


def _line(text: str) -> str:
    flat = " ".join(text.split())
    return flat[: MAX_LINE - 1] + "…" if len(flat) > MAX_LINE else flat


def recall_text(memories: list[Memory]) -> str:
    """Recalled memories as short lines (with when they happened); ``""`` for none."""
    lines = []
    for memory in memories:
        text = _line(memory.text)
        if text:
            when = f" ({memory.when[:10]})" if memory.when else ""
            lines.append(f"- {text}{when}")
    return "\n".join(lines)

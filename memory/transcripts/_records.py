"""Plain records returned by the session database: sessions, messages, search hits."""

from __future__ import annotations

import json
import logging
import sqlite3
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any

__all__ = ["SESSION_COLUMNS", "SearchHit", "SessionRecord", "StoredMessage", "utc_date"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """One row of the ``sessions`` table."""

    id: str
    source: str
    platform: str
    chat_id: str | None
    user_key: str
    thread_id: str | None
    user_id: str | None
    model: str | None
    system_prompt: str | None
    parent_session_id: str | None
    started_at: float
    last_active_at: float | None
    ended_at: float | None
    end_reason: str | None
    message_count: int
    tool_call_count: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    reasoning_tokens: int
    title: str | None
    summary: str | None
    is_direct: bool | None = None
    """A one-to-one chat (None: recorded before chorus kept it)."""

    @property
    def is_open(self) -> bool:
        """Whether the session has not been ended."""
        return self.ended_at is None

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> SessionRecord:
        values = {name: row[name] for name in SESSION_COLUMNS}
        if values["is_direct"] is not None:
            values["is_direct"] = bool(values["is_direct"])
        return cls(**values)


SESSION_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(SessionRecord))
"""Column names of ``sessions`` in the order of ``SessionRecord``'s fields."""


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """One row of the ``messages`` table, with ``tool_calls`` parsed from JSON."""

    id: int
    session_id: str
    role: str
    content: str | None
    tool_call_id: str | None
    tool_calls: list[dict[str, Any]] | None
    tool_name: str | None
    timestamp: float
    token_count: int | None
    finish_reason: str | None
    reasoning: str | None
    speaker: str | None = None
    """The user key of who wrote a user message (None: not recorded)."""
    platform_message_id: str | None = None
    """The platform's id of a user message (None: not recorded)."""

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> StoredMessage:
        return cls(
            id=row["id"],
            session_id=row["session_id"],
            role=row["role"],
            content=row["content"],
            tool_call_id=row["tool_call_id"],
            tool_calls=_parse_tool_calls(row["tool_calls"], row["id"]),
            tool_name=row["tool_name"],
            timestamp=row["timestamp"],
            token_count=row["token_count"],
            finish_reason=row["finish_reason"],
            reasoning=row["reasoning"],
            speaker=row["speaker"],
            platform_message_id=row["platform_message_id"],
        )

    def to_openai(self) -> dict[str, Any]:
        """The message as an OpenAI chat-completions message dict.

        ``content`` is always present (``None`` for an assistant message that
        only calls tools); ``tool_calls``, ``tool_call_id`` and ``name`` are
        present only when set.
        """
        message: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = self.tool_calls
        if self.tool_call_id is not None:
            message["tool_call_id"] = self.tool_call_id
        if self.tool_name is not None:
            message["name"] = self.tool_name
        return message


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One message found by a transcript search.

    ``snippet`` marks matched terms with ``>>>`` and ``<<<`` and elided text
    with ``…``; ``date`` is the message's UTC day (``YYYY-MM-DD``); ``rank`` is
    the BM25 score (FTS5's formula) with the searching user's own messages as
    the collection, lower is better.
    """

    session_id: str
    message_id: int
    role: str
    snippet: str
    timestamp: float
    session_started_at: float
    date: str
    rank: float


def utc_date(timestamp: float) -> str:
    """The UTC calendar day of an epoch timestamp as ``YYYY-MM-DD``."""
    return datetime.fromtimestamp(timestamp, UTC).date().isoformat()


def _parse_tool_calls(raw: str | None, message_id: int) -> list[dict[str, Any]] | None:
    if raw is None:
        return None
    try:
        parsed = json.loads(raw)
    except ValueError:
        logger.debug("message %d has unreadable tool_calls json; ignored", message_id)
        return None
    if isinstance(parsed, dict):
        return [parsed]
    if isinstance(parsed, list):
        return parsed
    return None

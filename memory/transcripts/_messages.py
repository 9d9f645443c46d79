"""The messages of SessionDB's transcripts: appended (each bumping its session's
counters, fenced by the session's epoch on PostgreSQL), read back in order, found by
the platform's id of a user message, retracted or edited, and searched (one user's
own, in SQL).

``Messages`` is a part of ``SessionDB`` (its base class).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from memory.errors import SessionDBError
from memory.transcripts import _platform_ids as platform_ids
from memory.transcripts._epochs import check_epoch
from memory.transcripts._pg_search import search_messages_pg
from memory.transcripts._platform_ids import PlatformIds, Retracted
from memory.transcripts._records import SearchHit, StoredMessage
from memory.transcripts._search import search_messages
from memory.transcripts._tx import Transactions

__all__ = ["Messages", "ToolCalls"]

ToolCalls = Sequence[Mapping[str, Any]] | Mapping[str, Any]

_USER_NUMBER = (
    "(SELECT u.n FROM sessions AS s JOIN user_numbers AS u ON u.user_key = s.user_key"
    " WHERE s.id = ?)"
)
"""The number of a session's user, which keys its messages in the FTS index."""

_MESSAGE_COLUMNS = (
    "session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp, token_count,"
    " finish_reason, reasoning, speaker, platform_message_id"
)
_INSERT_MESSAGE = {
    False: f"INSERT INTO messages ({_MESSAGE_COLUMNS}, user_n)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, " + _USER_NUMBER + ") RETURNING id",
    True: f"INSERT INTO messages ({_MESSAGE_COLUMNS})"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
}
"""By backend (``True``: PostgreSQL, whose search needs no user number)."""


class Messages(Transactions):
    """The message side of the transcript store."""

    def append_message(
        self,
        session_id: str,
        role: str,
        content: str | None,
        *,
        tool_call_id: str | None = None,
        tool_calls: ToolCalls | None = None,
        tool_name: str | None = None,
        timestamp: float | None = None,
        token_count: int | None = None,
        finish_reason: str | None = None,
        reasoning: str | None = None,
        speaker: str | None = None,
        epoch: int | None = None,
        platform_message_id: PlatformIds = None,
    ) -> int:
        """Append one message to a session's transcript and return its id.

        Bumps the session's message and tool-call counters and moves its
        ``last_active_at`` forward to ``timestamp``. ``platform_message_id``: the
        platform's id of a user message, or the parts it was merged from. With
        ``epoch`` (PostgreSQL, several replicas) the write is refused with
        ``SessionFenced`` unless it is the session's newest (0: none was taken),
        checked in the same transaction.
        """
        call_count, calls_json = _encode_tool_calls(tool_calls)
        ts = time.time() if timestamp is None else timestamp
        with self._write() as conn:
            if epoch is not None and self._pg is not None:
                check_epoch(conn, session_id, epoch)
            cur = conn.execute(
                "UPDATE sessions SET message_count = message_count + 1,"
                " tool_call_count = tool_call_count + ?,"
                " last_active_at = CASE WHEN last_active_at IS NULL OR last_active_at < ?"
                " THEN ? ELSE last_active_at END WHERE id = ?",
                (call_count, ts, ts, session_id),
            )
            if cur.rowcount != 1:
                raise SessionDBError(f"cannot append to unknown session {session_id!r}")
            params: tuple[Any, ...] = (
                session_id,
                role,
                content,
                tool_call_id,
                calls_json,
                tool_name,
                ts,
                token_count,
                finish_reason,
                reasoning,
                speaker,
                platform_message_id if isinstance(platform_message_id, str) else None,
            )
            postgres = self._pg is not None
            row = conn.execute(
                _INSERT_MESSAGE[postgres], params if postgres else (*params, session_id)
            ).fetchone()
            if row is None:  # pragma: no cover - an INSERT … RETURNING always returns it
                raise SessionDBError("the database did not return the new message id")
            if platform_message_id and not isinstance(platform_message_id, str):
                platform_ids.insert_parts(conn, int(row[0]), platform_message_id)
        return int(row[0])

    def take_epoch(self, session_id: str) -> int:
        """A new, larger epoch for a session whose writer changes (a replica took it
        over); writes with an older one are refused from now on. 0 on SQLite, where one
        process writes and nothing is fenced."""
        if self._pg is None:
            return 0
        with self._write() as conn:
            row = conn.execute(
                "INSERT INTO session_epochs (session_id, epoch) VALUES (?, 1)"
                " ON CONFLICT (session_id) DO UPDATE SET epoch = session_epochs.epoch + 1"
                " RETURNING epoch",
                (session_id,),
            ).fetchone()
        assert row is not None
        return int(row[0])

    def get_messages(self, session_id: str) -> list[StoredMessage]:
        """The session's transcript in the order it was appended."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT * FROM messages WHERE session_id = ? ORDER BY id", (session_id,)
            ).fetchall()
        return [StoredMessage.from_row(row) for row in rows]

    def platform_message(
        self, platform: str, chat_id: str, platform_message_id: str
    ) -> tuple[StoredMessage, int] | None:
        """The user message the platform knows as ``platform_message_id`` (its own, or one
        of the parts it was merged from) in a session of that chat, still holding its text,
        and its turn's position (1-based, over every user message of its session); None
        when no session has it."""
        with self._read() as conn:
            found = platform_ids.find(conn, platform, chat_id, platform_message_id)
            if found is None:
                return None
            count = conn.execute(
                "SELECT COUNT(*) FROM messages WHERE session_id = ? AND role = 'user' AND id <= ?",
                (found.session_id, found.id),
            ).fetchone()
        return found, int(count[0])

    def remove_platform_message(
        self, session_id: str, platform_message_id: str
    ) -> Retracted | None:
        """Remove the text of the user message the platform knows as
        ``platform_message_id`` from the session's transcript and its search index (of a
        message merged from several: that part's text; all of it once no part with text
        is left). The row stays, so later turns keep their positions; one left without
        text is left out of any history rebuilt from the transcript. None when the
        session has no such message (or its text is gone already)."""
        with self._write() as conn:
            return platform_ids.set_text(conn, session_id, platform_message_id, None)

    def edit_platform_message(
        self, session_id: str, platform_message_id: str, content: str
    ) -> Retracted | None:
        """Replace the stored text of the user message (or the part of one) the platform
        knows as ``platform_message_id``; its search index rows follow. None when the
        session has no such message."""
        with self._write() as conn:
            return platform_ids.set_text(conn, session_id, platform_message_id, content)

    def search(
        self,
        user_key: str,
        query: str,
        limit: int = 10,
        exclude_session_id: str | None = None,
    ) -> list[SearchHit]:
        """Full-text search over the user and assistant messages of one user's sessions.

        Any text is accepted: it is reduced to word tokens that must all match;
        if nothing does, any of them may. Best match first (BM25 over the user's
        own messages). The work done follows the user's history, not the table's.
        """
        with self._read() as conn:
            if self._pg is not None:
                return search_messages_pg(conn, user_key, query, limit, exclude_session_id)
            return search_messages(conn, user_key, query, limit, exclude_session_id)  # type: ignore[arg-type]


def _encode_tool_calls(tool_calls: ToolCalls | None) -> tuple[int, str | None]:
    """The number of tool calls and their JSON text (a single mapping counts as a list of one)."""
    if tool_calls is None:
        return 0, None
    try:
        if isinstance(tool_calls, Mapping):
            calls = [dict(tool_calls)]
        else:
            calls = [dict(call) for call in tool_calls]
        return len(calls), json.dumps(calls, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise SessionDBError(f"tool_calls cannot be stored as JSON: {exc}") from exc

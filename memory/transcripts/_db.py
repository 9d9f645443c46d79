"""SessionDB: the SQLite transcript store (WAL mode, FTS5 search).

Every session and every message of it is kept here, so an agent can be rebuilt
from its transcript and a user can search their own past conversations. The
core is synchronous and thread-safe (one connection behind a lock);
``memory.transcripts.AsyncSessionDB`` runs it off the event loop.

Searching is scoped to one user in SQL. ``SessionDB.for_user`` hands out a
``UserSessions`` view bound to one user key, so code acting for a user cannot
reach another user's transcripts by forgetting a filter.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from memory.errors import SessionDBError
from memory.transcripts import _platform_ids as platform_ids
from memory.transcripts._epochs import check_epoch
from memory.transcripts._pg_schema import apply_pg_schema
from memory.transcripts._pg_search import search_messages_pg
from memory.transcripts._platform_ids import PlatformIds, Retracted
from memory.transcripts._records import SESSION_COLUMNS, SearchHit, SessionRecord, StoredMessage
from memory.transcripts._schema import fts5_available, prepare_connection
from memory.transcripts._search import search_messages
from memory.transcripts._tx import Transactions
from memory.transcripts._user_sessions import UserSessions

if TYPE_CHECKING:
    from memory.database import PostgresPool

__all__ = ["SessionDB", "UserSessions", "fts5_available"]

logger = logging.getLogger(__name__)

ToolCalls = Sequence[Mapping[str, Any]] | Mapping[str, Any]

_COLUMNS = ", ".join(SESSION_COLUMNS)
_SETTABLE = Literal["title", "summary", "system_prompt"]
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


class SessionDB(Transactions):
    """Transcript store in one SQLite file; safe to share between threads.

    After ``close()`` every call raises ``SessionDBError``.
    """

    ERROR = SessionDBError
    WHAT = "session database"
    SYNCHRONOUS = "NORMAL"
    """A transcript may lose its last writes to a power cut (never to a crash of chorus)."""

    def _prepare(self, conn: sqlite3.Connection) -> None:
        prepare_connection(conn, self._path)  # FTS5 check, migrations

    def _prepare_postgres(self, pool: PostgresPool) -> None:
        with pool.lock:
            if "transcripts" in pool.prepared:
                return
            with pool.schema_transaction() as conn:
                apply_pg_schema(conn)
            pool.prepared.add("transcripts")

    @property
    def _order(self) -> str:
        """The column that keeps sessions in insertion order."""
        return "seq" if self._pg is not None else "rowid"

    def for_user(self, user_key: str, also: tuple[str, ...] = ()) -> UserSessions:
        """A view of this database limited to the sessions of ``user_key`` (and of the keys
        ``also`` names: the accounts of a person, see ``memory.people``)."""
        return UserSessions(self, user_key, also)

    def create_session(
        self,
        session_id: str,
        *,
        platform: str,
        user_key: str,
        chat_id: str | None = None,
        thread_id: str | None = None,
        user_id: str | None = None,
        model: str | None = None,
        system_prompt: str | None = None,
        parent_session_id: str | None = None,
        started_at: float | None = None,
        is_direct: bool | None = None,
    ) -> None:
        """Record a new session; creating an id that exists already does nothing."""
        if not (session_id and platform and user_key):
            raise SessionDBError("a session needs a session id, a platform and a user key")
        started = time.time() if started_at is None else started_at
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO sessions (id, source, platform, chat_id, user_key, thread_id,"
                " user_id, model, system_prompt, parent_session_id, started_at, last_active_at,"
                " is_direct) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(id) DO NOTHING",
                (
                    session_id,
                    platform,
                    platform,
                    chat_id,
                    user_key,
                    thread_id,
                    user_id,
                    model,
                    system_prompt,
                    parent_session_id,
                    started,
                    started,
                    None if is_direct is None else int(is_direct),
                ),
            )
        if cur.rowcount:
            logger.debug("session %s created", session_id)

    def end_session(self, session_id: str, reason: str, ended_at: float | None = None) -> bool:
        """Mark a session ended unless it is already; return whether it changed."""
        ended = time.time() if ended_at is None else ended_at
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE sessions SET ended_at = ?, end_reason = ?"
                " WHERE id = ? AND ended_at IS NULL",
                (ended, reason, session_id),
            )
        changed = cur.rowcount == 1
        if changed:
            logger.debug("session %s ended (%s)", session_id, reason)
        return changed

    def request_end(self, session_id: str, reason: str) -> bool:
        """Record why an open session is being ended, before the ending work runs.

        The first reason stays. A session found open at start-up with a reason
        is ended with that reason, not as if it had expired.
        """
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE sessions SET end_reason = ?"
                " WHERE id = ? AND ended_at IS NULL AND end_reason IS NULL",
                (reason, session_id),
            )
        return cur.rowcount == 1

    def get_session(self, session_id: str) -> SessionRecord | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
        return None if row is None else SessionRecord.from_row(row)

    def list_sessions(
        self, *, user_key: str | None = None, active_only: bool = False, limit: int = 50
    ) -> list[SessionRecord]:
        """Sessions newest first, optionally of one user and only the open ones."""
        clauses: list[str] = []
        params: list[Any] = []
        if user_key is not None:
            clauses.append("user_key = ?")
            params.append(user_key)
        if active_only:
            clauses.append("ended_at IS NULL")
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        sql = (
            f"SELECT {_COLUMNS} FROM sessions {where} ORDER BY started_at DESC, {self._order} DESC"
            " LIMIT ?"
        )
        with self._read() as conn:
            rows = conn.execute(sql, (*params, max(limit, 0))).fetchall()
        return [SessionRecord.from_row(row) for row in rows]

    def find_open_sessions(self) -> list[SessionRecord]:
        """Every session not yet ended, oldest first (for the reaper at start-up)."""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM sessions WHERE ended_at IS NULL"
                f" ORDER BY started_at, {self._order}"
            ).fetchall()
        return [SessionRecord.from_row(row) for row in rows]

    def open_session_of(
        self, user_key: str, platform: str, chat_id: str | None, thread_id: str | None
    ) -> SessionRecord | None:
        """The user's newest open session in that chat (and thread, unless None: any)."""
        thread = "" if thread_id is None else " AND thread_id = ?"
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM sessions WHERE user_key = ? AND platform = ?"
                f" AND chat_id IS ? AND ended_at IS NULL{thread}"
                f" ORDER BY started_at DESC, {self._order} DESC LIMIT 1",
                (user_key, platform, chat_id, *(() if thread_id is None else (thread_id,))),
            ).fetchone()
        return None if row is None else SessionRecord.from_row(row)

    def add_usage(
        self,
        session_id: str,
        *,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        reasoning_tokens: int = 0,
    ) -> None:
        """Add token counts to the session's running totals."""
        counts = (
            input_tokens,
            output_tokens,
            cache_read_tokens,
            cache_write_tokens,
            reasoning_tokens,
        )
        if min(counts) < 0:
            raise SessionDBError("token counts must not be negative")
        with self._write() as conn:
            conn.execute(
                "UPDATE sessions SET input_tokens = input_tokens + ?,"
                " output_tokens = output_tokens + ?, cache_read_tokens = cache_read_tokens + ?,"
                " cache_write_tokens = cache_write_tokens + ?,"
                " reasoning_tokens = reasoning_tokens + ? WHERE id = ?",
                (*counts, session_id),
            )

    def set_title(self, session_id: str, title: str | None) -> None:
        self._set(session_id, "title", title)

    def set_summary(self, session_id: str, summary: str | None) -> None:
        """Store the handoff summary written when the session ended."""
        self._set(session_id, "summary", summary)

    def set_system_prompt(self, session_id: str, prompt: str | None) -> None:
        self._set(session_id, "system_prompt", prompt)

    def previous_session(
        self, user_key: str, platform: str, chat_id: str | None, thread_id: str | None
    ) -> tuple[str, str] | None:
        """``(id, end reason)`` of the user's latest session in that chat and thread that
        ended or is ending (its reason recorded); None when there is none."""
        with self._read() as conn:
            row = conn.execute(
                "SELECT id, end_reason FROM sessions WHERE platform = ? AND chat_id IS ?"
                " AND user_key = ? AND thread_id IS ? AND end_reason IS NOT NULL"
                f" ORDER BY started_at DESC, {self._order} DESC LIMIT 1",
                (platform, chat_id, user_key, thread_id),
            ).fetchone()
        return None if row is None else (str(row["id"]), str(row["end_reason"]))

    def latest_summary(
        self, user_key: str, platform: str, chat_id: str | None, thread_id: str | None
    ) -> str | None:
        """The summary of the user's most recently ended session in that chat and thread.

        Ended sessions without a summary are skipped.
        """
        with self._read() as conn:
            row = conn.execute(
                "SELECT summary FROM sessions WHERE platform = ? AND chat_id IS ?"
                " AND user_key = ? AND thread_id IS ? AND ended_at IS NOT NULL"
                " AND summary IS NOT NULL AND summary != ''"
                f" ORDER BY ended_at DESC, {self._order} DESC LIMIT 1",
                (platform, chat_id, user_key, thread_id),
            ).fetchone()
        return None if row is None else str(row["summary"])

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

    def _set(self, session_id: str, column: _SETTABLE, value: str | None) -> None:
        with self._write() as conn:
            cur = conn.execute(
                f"UPDATE sessions SET {column} = ? WHERE id = ?", (value, session_id)
            )
        if cur.rowcount == 0:
            logger.debug("no session %s to set %s on", session_id, column)


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

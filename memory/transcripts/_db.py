"""SessionDB: the SQLite transcript store (WAL mode, FTS5 search).

Every session and every message of it is kept here, so an agent can be rebuilt
from its transcript and a user can search their own past conversations. The
core is synchronous and thread-safe (one connection behind a lock);
``memory.transcripts.AsyncSessionDB`` runs it off the event loop.

Searching is scoped to one user in SQL. ``SessionDB.for_user`` hands out a
``UserSessions`` view bound to one user key, so code acting for a user cannot
reach another user's transcripts by forgetting a filter. The messages (appending,
reading, retracting, searching them) are ``_messages.Messages``, its base class.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from typing import TYPE_CHECKING, Any, Literal

from memory.errors import SessionDBError
from memory.transcripts._messages import Messages
from memory.transcripts._pg_schema import apply_pg_schema
from memory.transcripts._records import SESSION_COLUMNS, SessionRecord
from memory.transcripts._schema import fts5_available, prepare_connection
from memory.transcripts._user_sessions import UserSessions

if TYPE_CHECKING:
    from memory.database import PostgresPool

__all__ = ["SessionDB", "UserSessions", "fts5_available"]

logger = logging.getLogger(__name__)

_COLUMNS = ", ".join(SESSION_COLUMNS)
_SETTABLE = Literal["title", "summary", "system_prompt"]


class SessionDB(Messages):
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

    def _set(self, session_id: str, column: _SETTABLE, value: str | None) -> None:
        with self._write() as conn:
            cur = conn.execute(
                f"UPDATE sessions SET {column} = ? WHERE id = ?", (value, session_id)
            )
        if cur.rowcount == 0:
            logger.debug("no session %s to set %s on", session_id, column)

"""What background jobs remember between runs, in SQLite beside the transcripts.

- The *ledger* makes job functions idempotent: a step of a job (``flush:<id>``,
  ``sync:<id>:<turn>``…) is marked done once it succeeded, and a retried or
  duplicated job skips every step already marked.
- *Prefetched context*: the result of a background ``prefetch`` job, kept until
  the next turn of that session takes it.

Each process opens its own connection; SQLite (WAL) serialises the writers.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from pathlib import Path

from memory.errors import SessionDBError

logger = logging.getLogger(__name__)

_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS job_ledger (
        key TEXT PRIMARY KEY,
        done_at REAL NOT NULL
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS prefetched_context (
        session_id TEXT PRIMARY KEY,
        query TEXT NOT NULL,
        context TEXT NOT NULL,
        created_at REAL NOT NULL
    )
    """,
)


class JobState:
    """Ledger and prefetch results for the background jobs of one CHORUS_HOME."""

    def __init__(self, path: Path) -> None:
        self._lock = threading.Lock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA busy_timeout=5000")
            for statement in _SCHEMA:
                self._conn.execute(statement)
        except sqlite3.Error as exc:
            raise SessionDBError(f"cannot open job state in {path}: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def is_done(self, key: str) -> bool:
        with self._lock:
            row = self._conn.execute("SELECT 1 FROM job_ledger WHERE key = ?", (key,)).fetchone()
        return row is not None

    def mark_done(self, key: str, at: float | None = None) -> bool:
        """Record ``key`` as done; False if it already was."""
        with self._lock:
            cursor = self._conn.execute(
                "INSERT OR IGNORE INTO job_ledger (key, done_at) VALUES (?, ?)",
                (key, time.time() if at is None else at),
            )
        return cursor.rowcount == 1

    def put_prefetched(self, session_id: str, query: str, context: str) -> None:
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO prefetched_context (session_id, query, context, created_at)"
                " VALUES (?, ?, ?, ?)",
                (session_id, query, context, time.time()),
            )

    def take_prefetched(self, session_id: str) -> str | None:
        """The context prefetched for this session, removed as it is read."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                row = self._conn.execute(
                    "SELECT context FROM prefetched_context WHERE session_id = ?", (session_id,)
                ).fetchone()
                self._conn.execute(
                    "DELETE FROM prefetched_context WHERE session_id = ?", (session_id,)
                )
                self._conn.execute("COMMIT")
            except sqlite3.Error:
                self._conn.execute("ROLLBACK")
                raise
        return None if row is None else str(row[0])

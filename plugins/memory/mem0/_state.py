"""What the provider keeps per user beside mem0: synced turns and the warm prefetch.

``state.db`` (SQLite) in the user's provider directory, shared by every process
on the same ``CHORUS_HOME``:

* ``synced_turns``: a hash of each turn given to mem0 (with whose turn it
  was), who said it and the ids of the memories it created. A job delivered
  twice finds its turn here and adds nothing; a turn withdrawn by ``/undo``
  finds the memories to remove, by its text alone (the withdrawal does not say
  who spoke). It lives with the session's own user key, the chat's in a group.
* ``prefetch``: the recall :meth:`~plugins.memory.mem0.Mem0Provider.queue_prefetch`
  computed after the last turn, returned by ``prefetch`` while the store is
  busy with another process's write.

Each call opens and closes its own connection, so any thread may call.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

STATE_FILE = "state.db"
MAX_TURNS = 5000
"""Synced turns kept per user; older ones are forgotten (their jobs are long done)."""

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS synced_turns (turn TEXT PRIMARY KEY, content TEXT NOT NULL,"
    " user_id TEXT NOT NULL, memory_ids TEXT NOT NULL, at REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS synced_turns_content ON synced_turns (content, at)",
    "CREATE TABLE IF NOT EXISTS prefetch (id INTEGER PRIMARY KEY CHECK (id = 1),"
    " text TEXT NOT NULL, at REAL NOT NULL)",
)


def content_hash(backend: str, session_id: str, user_content: str, assistant_content: str) -> str:
    """A stable name for the text of one turn of one session, given to one ``backend``."""
    data = json.dumps([backend, session_id, user_content, assistant_content], ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def turn_hash(content: str, user_id: str) -> str:
    """A stable name for one turn: its :func:`content_hash` and who said it."""
    return hashlib.sha256(f"{content}\0{user_id}".encode()).hexdigest()


class UserState:
    def __init__(self, directory: Path) -> None:
        self.path = directory / STATE_FILE
        self._ready = False

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.path, timeout=30)
        try:
            if not self._ready:
                for statement in _SCHEMA:
                    conn.execute(statement)
                self._ready = True
            with conn:
                yield conn
        finally:
            conn.close()

    # -- synced turns --------------------------------------------------------

    def synced(self, turn: str) -> bool:
        with self._connect() as conn:
            row = conn.execute("SELECT 1 FROM synced_turns WHERE turn = ?", (turn,)).fetchone()
        return row is not None

    def record_turn(self, content: str, user_id: str, memory_ids: list[str]) -> None:
        with self._connect() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO synced_turns (turn, content, user_id, memory_ids, at)"
                " VALUES (?, ?, ?, ?, ?)",
                (
                    turn_hash(content, user_id),
                    content,
                    user_id,
                    json.dumps(memory_ids),
                    time.time(),
                ),
            )
            conn.execute(
                "DELETE FROM synced_turns WHERE turn NOT IN"
                " (SELECT turn FROM synced_turns ORDER BY at DESC LIMIT ?)",
                (MAX_TURNS,),
            )

    def find_turn(self, content: str, user_id: str | None) -> tuple[str, str, list[str]] | None:
        """The latest synced turn with this text (and speaker, if known).

        Returns its name, who said it and the ids of the memories it created.
        """
        query = "SELECT turn, user_id, memory_ids FROM synced_turns WHERE content = ?"
        values: tuple[str, ...] = (content,)
        if user_id is not None:
            query, values = query + " AND user_id = ?", (content, user_id)
        with self._connect() as conn:
            row = conn.execute(query + " ORDER BY at DESC LIMIT 1", values).fetchone()
        if row is None:
            return None
        ids = json.loads(row[2])
        return str(row[0]), str(row[1]), [str(i) for i in ids] if isinstance(ids, list) else []

    def forget_turn(self, turn: str) -> None:
        with self._connect() as conn:
            conn.execute("DELETE FROM synced_turns WHERE turn = ?", (turn,))

    # -- warm prefetch -------------------------------------------------------

    def store_prefetch(self, text: str) -> None:
        with self._connect() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO prefetch (id, text, at) VALUES (1, ?, ?)",
                (text, time.time()),
            )

    def cached_prefetch(self, max_age: float) -> str:
        """The last warmed recall if it is at most ``max_age`` seconds old, else ``""``."""
        with self._connect() as conn:
            row = conn.execute("SELECT text, at FROM prefetch WHERE id = 1").fetchone()
        if row is None or time.time() - float(row[1]) > max_age:
            return ""
        return str(row[0])

"""What the provider keeps on disk: the turns not yet in Hindsight, and the warm recall.

``hindsight.db`` (SQLite) in a user's provider directory
(``CHORUS_HOME/providers/hindsight/users/<platform>/<id>/``), shared by every
process on the same home. Each call opens its own connection, so any thread
may call, and a worker killed at any point loses nothing that was written.

* ``turns``: each synced turn, in the order it came, with the bank it belongs
  to (the speaker's in a group session). A turn is *pending* until it is sealed
  into a *part* (a number per session and bank, taken in one write
  transaction); a part is retained as one Hindsight document with a stable id
  and marked retained when the server took it. Retaining a part again upserts
  the same document with the same text, so a retry after a crash or a
  failure is harmless. The turn's digest is unique: a re-delivered job adds
  nothing. Retained turns are forgotten after :data:`KEEP_RETAINED` seconds.
* ``recall_cache``: the last recall ``queue_prefetch`` made for a bank, used
  before a turn when the live recall fails or is too slow.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

DB_FILE = "hindsight.db"
KEEP_RETAINED = 7 * 86400.0

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS turns (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " digest TEXT NOT NULL UNIQUE, session_id TEXT NOT NULL, bank_id TEXT NOT NULL,"
    " speaker TEXT NOT NULL, user_text TEXT NOT NULL, assistant_text TEXT NOT NULL,"
    " at REAL NOT NULL, part INTEGER, retained_at REAL)",
    "CREATE INDEX IF NOT EXISTS turns_part ON turns (session_id, bank_id, part)",
    "CREATE TABLE IF NOT EXISTS recall_cache (bank_id TEXT PRIMARY KEY, text TEXT NOT NULL,"
    " at REAL NOT NULL)",
)


@dataclass(frozen=True)
class Turn:
    speaker: str
    user: str
    assistant: str
    at: float


@dataclass(frozen=True)
class Part:
    """A sealed part of one session's document for one bank."""

    session_id: str
    bank_id: str
    number: int


def turn_digest(session_id: str, bank_id: str, user: str, assistant: str) -> str:
    data = json.dumps([session_id, bank_id, user, assistant], ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


class Buffer:
    def __init__(self, directory: Path) -> None:
        self.path = directory / DB_FILE
        self._ready = False

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            if not self._ready:
                conn.execute("PRAGMA journal_mode=WAL")
                for statement in _SCHEMA:
                    conn.execute(statement)
                self._ready = True
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            conn.close()

    # -- turns ---------------------------------------------------------------

    def add(self, session_id: str, bank_id: str, speaker: str, user: str, assistant: str) -> bool:
        """Keep one turn; False when this very turn is already here (a re-delivered job)."""
        digest = turn_digest(session_id, bank_id, user, assistant)
        with self._connect() as conn:
            cursor = conn.execute(
                "INSERT OR IGNORE INTO turns (digest, session_id, bank_id, speaker, user_text,"
                " assistant_text, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (digest, session_id, bank_id, speaker, user, assistant, time.time()),
            )
            return cursor.rowcount == 1

    def withdraw(self, session_id: str, user: str, assistant: str) -> Part | None:
        """Forget a withdrawn turn; the part it was sealed into (to retain again), if any."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT seq, bank_id, part FROM turns WHERE session_id = ? AND user_text = ?"
                " AND assistant_text = ? ORDER BY seq DESC LIMIT 1",
                (session_id, user, assistant),
            ).fetchall()
            if not rows:
                return None
            seq, bank, part = rows[0]
            conn.execute("DELETE FROM turns WHERE seq = ?", (seq,))
            if part is None:
                return None
            left = conn.execute(
                "SELECT COUNT(*) FROM turns WHERE session_id = ? AND bank_id = ? AND part = ?",
                (session_id, bank, part),
            ).fetchone()[0]
            if not left:
                return None
            conn.execute(
                "UPDATE turns SET retained_at = NULL WHERE session_id = ? AND bank_id = ?"
                " AND part = ?",
                (session_id, bank, part),
            )
            return Part(session_id, str(bank), int(part))

    def pending(self, session_id: str) -> dict[str, tuple[int, int]]:
        """Per bank: how many turns of the session are not sealed yet, and their characters."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT bank_id, COUNT(*), SUM(LENGTH(user_text) + LENGTH(assistant_text))"
                " FROM turns WHERE session_id = ? AND part IS NULL GROUP BY bank_id",
                (session_id,),
            ).fetchall()
        return {str(bank): (int(count), int(chars or 0)) for bank, count, chars in rows}

    def seal(self, session_id: str, bank_id: str | None = None) -> None:
        """Seal the session's pending turns (of one bank, or all) into a new part per bank."""
        with self._connect() as conn:
            banks = [
                str(row[0])
                for row in conn.execute(
                    "SELECT DISTINCT bank_id FROM turns WHERE session_id = ? AND part IS NULL",
                    (session_id,),
                )
                if bank_id is None or row[0] == bank_id
            ]
            for bank in banks:
                last = conn.execute(
                    "SELECT MAX(part) FROM turns WHERE session_id = ? AND bank_id = ?",
                    (session_id, bank),
                ).fetchone()[0]
                conn.execute(
                    "UPDATE turns SET part = ? WHERE session_id = ? AND bank_id = ?"
                    " AND part IS NULL",
                    (int(last or 0) + 1, session_id, bank),
                )

    def unretained(self) -> list[Part]:
        """Every sealed part not yet retained, oldest first."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT session_id, bank_id, part, MIN(seq) AS first FROM turns"
                " WHERE part IS NOT NULL AND retained_at IS NULL"
                " GROUP BY session_id, bank_id, part ORDER BY first"
            ).fetchall()
        return [Part(str(s), str(b), int(p)) for s, b, p, _ in rows]

    def turns(self, part: Part) -> list[Turn]:
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT speaker, user_text, assistant_text, at FROM turns WHERE session_id = ?"
                " AND bank_id = ? AND part = ? ORDER BY seq",
                (part.session_id, part.bank_id, part.number),
            ).fetchall()
        return [Turn(str(s), str(u), str(a), float(t)) for s, u, a, t in rows]

    def mark_retained(self, part: Part) -> None:
        now = time.time()
        with self._connect() as conn:
            conn.execute(
                "UPDATE turns SET retained_at = ? WHERE session_id = ? AND bank_id = ?"
                " AND part = ?",
                (now, part.session_id, part.bank_id, part.number),
            )
            conn.execute(
                "DELETE FROM turns WHERE retained_at IS NOT NULL AND retained_at < ?",
                (now - KEEP_RETAINED,),
            )

    # -- warm recall ---------------------------------------------------------

    def store_recall(self, bank_id: str, text: str) -> None:
        with self._connect() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO recall_cache (bank_id, text, at) VALUES (?, ?, ?)",
                (bank_id, text, time.time()),
            )

    def cached_recall(self, bank_id: str, max_age: float) -> str:
        """The last warmed recall of ``bank_id`` if at most ``max_age`` seconds old, else ``""``."""
        with self._connect() as conn:
            row = conn.execute(
                "SELECT text, at FROM recall_cache WHERE bank_id = ?", (bank_id,)
            ).fetchone()
        if row is None or time.time() - float(row[1]) > max_age:
            return ""
        return str(row[0])

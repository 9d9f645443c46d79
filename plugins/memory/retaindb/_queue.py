"""The durable write queue and the recall cache: ``CHORUS_HOME/providers/retaindb/queue.db``.

Every write to RetainDB (a turn from ``sync_turn``, a mirrored ``memory`` tool
write, a tool's memory or file, a session handed over at its end, a ``/undo``
delete) is first a row in this SQLite database (WAL mode, ``synchronous=FULL``),
committed before the provider returns, and only then sent. A row is deleted
after the server acknowledged it, so a process killed at any point leaves its
unsent (or unacknowledged) writes here; the next provider to start on this home
replays them, oldest first. Each row has a key derived from what it writes (the
same turn of the same session always has the same key), so a job delivered
twice finds its row already queued. RetainDB publishes no idempotency key: a
row's ``attempts`` is counted up *before* each send, so a row with attempts
left over was perhaps stored without the answer arriving, and the sender looks
for it on the server before sending it again.

A write the server refuses for good (a 4xx other than auth and rate limits,
or a 404: no such route at the configured URL) would block every write behind
it; it is moved to ``dead`` with the HTTP status, never silently dropped.

Only one process drains at a time (an ``flock`` on ``queue.lock``, released by
the kernel when a holder dies), so writes reach the server in order.

``turns`` maps each turn (and mirrored memory) write the server acknowledged
to the memory it created (a session handed over at its end to ``''``): the
same job delivered again is not stored twice,
and a turn withdrawn by ``/undo`` can be deleted on the server; a ``forget``
row of the queue does that, in order after the turn it withdraws.
``withdrawals`` counts how often each turn key was withdrawn: the same words
said again after an ``/undo`` are a new write with a new key, not a replay.
Rows older than :data:`TURN_KEEP` seconds are pruned (only the last turn of an
open session can be withdrawn).

``owned`` lists the memory ids the server showed as each user's (their own
writes, search and profile results), so ``retaindb_forget`` deletes only one
of the calling person's memories: RetainDB deletes by id alone.

``recall`` holds the text ``queue_prefetch`` found after each user's last turn,
read by ``prefetch`` when the server is slow or down. Rows are per user id and
every query names it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

QUEUE_FILE = "queue.db"
LOCK_FILE = "queue.lock"

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS writes (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " idem TEXT NOT NULL UNIQUE, user_id TEXT NOT NULL, kind TEXT NOT NULL,"
    " target TEXT NOT NULL DEFAULT '', payload TEXT NOT NULL, enqueued_at REAL NOT NULL,"
    " attempts INTEGER NOT NULL DEFAULT 0)",
    "CREATE TABLE IF NOT EXISTS recall (user_id TEXT PRIMARY KEY, text TEXT NOT NULL,"
    " at REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS turns (idem TEXT PRIMARY KEY, user_id TEXT NOT NULL,"
    " memory_id TEXT NOT NULL, at REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS withdrawals (base TEXT PRIMARY KEY,"
    " times INTEGER NOT NULL, at REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS owned (user_id TEXT NOT NULL, memory_id TEXT NOT NULL,"
    " at REAL NOT NULL, PRIMARY KEY (user_id, memory_id))",
    "CREATE TABLE IF NOT EXISTS dead (seq INTEGER PRIMARY KEY, idem TEXT NOT NULL,"
    " user_id TEXT NOT NULL, kind TEXT NOT NULL, target TEXT NOT NULL, payload TEXT NOT NULL,"
    " cause TEXT NOT NULL, at REAL NOT NULL)",
)
TURN_KEEP = 30 * 86_400.0


@dataclass(frozen=True)
class Write:
    seq: int
    idem: str
    user_id: str
    kind: str
    """``memory``, ``file`` (``target``: its name), ``session`` (a session handed over at
    its end) or ``forget`` (``target``: the key of the turn to delete)."""
    target: str
    payload: dict[str, Any]
    attempts: int = 0
    """Sends begun before this one; above zero, the write may be stored already."""


class WriteQueue:
    def __init__(self, directory: Path) -> None:
        self.path = directory / QUEUE_FILE
        self._lock_path = directory / LOCK_FILE
        self._ready = False
        self._init = threading.Lock()

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.path, timeout=30)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            with self._init:
                if not self._ready:
                    for statement in _SCHEMA:
                        conn.execute(statement)
                    conn.commit()
                    self._ready = True
            with conn:
                yield conn
        finally:
            conn.close()

    def enqueue(
        self, idem: str, user_id: str, kind: str, payload: dict[str, Any], target: str = ""
    ) -> bool:
        """Queue one write; False when a write with this key is already queued."""
        with self._connect() as conn:
            cursor = conn.execute(
                "INSERT OR IGNORE INTO writes (idem, user_id, kind, target, payload, enqueued_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (idem, user_id, kind, target, json.dumps(payload, ensure_ascii=False), time.time()),
            )
            return cursor.rowcount == 1

    def oldest(self) -> Write | None:
        with self._connect() as conn:
            row = conn.execute(
                "SELECT seq, idem, user_id, kind, target, payload, attempts FROM writes"
                " ORDER BY seq LIMIT 1"
            ).fetchone()
        if row is None:
            return None
        return Write(
            int(row[0]),
            str(row[1]),
            str(row[2]),
            str(row[3]),
            str(row[4]),
            json.loads(row[5]),
            int(row[6]),
        )

    def done(self, write: Write) -> None:
        with self._connect() as conn:
            conn.execute("DELETE FROM writes WHERE seq = ?", (write.seq,))

    def sending(self, write: Write) -> None:
        """Count a send of ``write`` as begun, before any byte of it leaves."""
        with self._connect() as conn:
            conn.execute("UPDATE writes SET attempts = attempts + 1 WHERE seq = ?", (write.seq,))

    def set_aside(self, write: Write, cause: str) -> None:
        """Move a write the server refused for good out of the way, into ``dead``."""
        with self._connect() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO dead (seq, idem, user_id, kind, target, payload, cause, at)"
                " SELECT seq, idem, user_id, kind, target, payload, ?, ? FROM writes WHERE seq = ?",
                (cause, time.time(), write.seq),
            )
            conn.execute("DELETE FROM writes WHERE seq = ?", (write.seq,))

    def refused(self, idem: str) -> str | None:
        """Why the server refused the write ``idem`` for good; None if it did not."""
        with self._connect() as conn:
            row = conn.execute("SELECT cause FROM dead WHERE idem = ?", (idem,)).fetchone()
        return None if row is None else str(row[0])

    def dead(self) -> list[tuple[str, str]]:
        """``(kind, cause)`` of each write set aside, oldest first."""
        with self._connect() as conn:
            rows = conn.execute("SELECT kind, cause FROM dead ORDER BY seq").fetchall()
        return [(str(kind), str(cause)) for kind, cause in rows]

    def forget_user(self, user_id: str) -> int:
        """Drop every row of ``user_id`` (unsent writes, dead ones, the cache); how many."""
        removed = 0
        with self._connect() as conn:
            for table in ("writes", "recall", "turns", "owned", "dead"):
                removed += conn.execute(
                    f"DELETE FROM {table} WHERE user_id = ?", (user_id,)
                ).rowcount
        return removed

    def own(self, user_id: str, memory_ids: list[str]) -> None:
        """The server showed ``memory_ids`` as memories of ``user_id``."""
        now = time.time()
        with self._connect() as conn:
            conn.execute("DELETE FROM owned WHERE at < ?", (now - TURN_KEEP,))
            conn.executemany(
                "INSERT OR REPLACE INTO owned (user_id, memory_id, at) VALUES (?, ?, ?)",
                [(user_id, memory_id, now) for memory_id in memory_ids],
            )

    def owns(self, user_id: str, memory_id: str) -> bool:
        with self._connect() as conn:
            row = conn.execute(
                "SELECT 1 FROM owned WHERE user_id = ? AND memory_id = ?", (user_id, memory_id)
            ).fetchone()
        return row is not None

    def disown(self, memory_id: str) -> None:
        with self._connect() as conn:
            conn.execute("DELETE FROM owned WHERE memory_id = ?", (memory_id,))

    def drop(self, idem: str) -> bool:
        """Remove a write not sent yet; False when no such write is queued."""
        with self._connect() as conn:
            return conn.execute("DELETE FROM writes WHERE idem = ?", (idem,)).rowcount == 1

    def record_turn(self, idem: str, user_id: str, memory_id: str) -> None:
        """The server stored the turn write ``idem`` as ``memory_id``."""
        now = time.time()
        with self._connect() as conn:
            conn.execute("DELETE FROM turns WHERE at < ?", (now - TURN_KEEP,))
            conn.execute(
                "INSERT OR REPLACE INTO turns (idem, user_id, memory_id, at) VALUES (?, ?, ?, ?)",
                (idem, user_id, memory_id, now),
            )

    def turn_memory(self, idem: str) -> str | None:
        """The memory id the server gave the turn write ``idem``; None if not known."""
        with self._connect() as conn:
            row = conn.execute("SELECT memory_id FROM turns WHERE idem = ?", (idem,)).fetchone()
        return None if row is None else str(row[0])

    def withdrawals(self, base: str) -> int:
        """How often a turn with the key ``base`` was withdrawn in its session."""
        with self._connect() as conn:
            row = conn.execute("SELECT times FROM withdrawals WHERE base = ?", (base,)).fetchone()
        return 0 if row is None else int(row[0])

    def count_withdrawal(self, base: str) -> None:
        now = time.time()
        with self._connect() as conn:
            conn.execute("DELETE FROM withdrawals WHERE at < ?", (now - TURN_KEEP,))
            conn.execute(
                "INSERT INTO withdrawals (base, times, at) VALUES (?, 1, ?) ON CONFLICT (base)"
                " DO UPDATE SET times = times + 1, at = excluded.at",
                (base, now),
            )

    def forget_turn(self, idem: str) -> None:
        with self._connect() as conn:
            conn.execute("DELETE FROM turns WHERE idem = ?", (idem,))

    def queued(self, idem: str) -> bool:
        with self._connect() as conn:
            return (
                conn.execute("SELECT 1 FROM writes WHERE idem = ?", (idem,)).fetchone() is not None
            )

    def size(self) -> int:
        with self._connect() as conn:
            return int(conn.execute("SELECT COUNT(*) FROM writes").fetchone()[0])

    @contextlib.contextmanager
    def draining(self, wait: float) -> Iterator[bool]:
        """Hold the drain lock (True), or give up after ``wait`` seconds (False)."""
        with open(self._lock_path, "a+b") as handle:
            deadline = time.monotonic() + wait
            while True:
                try:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        yield False
                        return
                    time.sleep(0.02)
            try:
                yield True
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    # -- recall cache --------------------------------------------------------

    def store_recall(self, user_id: str, text: str) -> None:
        with self._connect() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO recall (user_id, text, at) VALUES (?, ?, ?)",
                (user_id, text, time.time()),
            )

    def cached_recall(self, user_id: str, max_age: float) -> str:
        with self._connect() as conn:
            row = conn.execute(
                "SELECT text, at FROM recall WHERE user_id = ?", (user_id,)
            ).fetchone()
        if row is None or time.time() - float(row[1]) > max_age:
            return ""
        return str(row[0])

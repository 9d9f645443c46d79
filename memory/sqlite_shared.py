"""One connection per SQLite file per process, shared by every component that uses it.

``state.db`` holds the transcripts and the small tables of half a dozen
components (inbox, access, staged writes, job ledger, outbox, provider
health). With a connection each, their writers met inside SQLite, whose busy
handler makes a waiting writer sleep (1 ms, then longer, up to 100 ms a try)
and fails it after the busy timeout: under a burst of messages a write could
wait seconds, or fail. Sharing one connection behind one lock, writers of this
process queue on the lock and go the moment it is free; the busy timeout is
left to other processes (a ``chorus worker``, the CLI).

A connection is shared only inside the process that opened it: a forked child
opens its own.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["BUSY_TIMEOUT_MS", "SharedConnection", "acquire", "release"]

BUSY_TIMEOUT_MS = 5000
"""How long a statement waits for another process's lock before failing."""


@dataclass(eq=False)
class SharedConnection:
    """A connection, the lock that serialises its use, and who holds it."""

    conn: sqlite3.Connection
    path: Path
    pid: int
    lock: threading.RLock = field(default_factory=threading.RLock)
    users: int = 0
    prepared: set[str] = field(default_factory=set)
    """The components whose tables were created or migrated on this connection."""
    synchronous: str = "FULL"
    wal: bool = False
    """The file is in WAL mode: a FULL commit can be made durable after the lock is let go
    (``sync_wal``)."""
    _wal_fd: int | None = None
    _wal_lock: threading.Lock = field(default_factory=threading.Lock)
    _reader: sqlite3.Connection | None = None
    _reader_lock: threading.Lock = field(default_factory=threading.Lock)
    _closed: bool = False
    _holding: threading.local = field(default_factory=threading.local)

    @contextmanager
    def held(self) -> Iterator[sqlite3.Connection]:
        """The shared connection under its lock (every write, and a read nested in one)."""
        with self.lock:
            depth = getattr(self._holding, "depth", 0)
            self._holding.depth = depth + 1
            try:
                yield self.conn
            finally:
                self._holding.depth = depth

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A connection for one read. In WAL mode a second connection, read-only: a read
        never waits for the writers of this process (a batch of transcript writes, an
        inbox commit) and sees what they committed. Inside a block that holds the shared
        connection, or without WAL, the shared connection (a read there sees its writes)."""
        depth: int = getattr(self._holding, "depth", 0)
        if not self.wal or depth:
            with self.held() as conn:
                yield conn
            return
        with self._reader_lock:
            if self._closed:
                raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
            if self._reader is None:
                reader = connect(self.path)
                reader.execute("PRAGMA query_only = ON")
                self._reader = reader
            yield self._reader

    def set_synchronous(self, level: str) -> None:
        """``PRAGMA synchronous`` for the next transaction (under the lock)."""
        if level != self.synchronous:
            self.conn.execute(f"PRAGMA synchronous = {level}")
            self.synchronous = level

    def sync_wal(self) -> None:
        """Make every commit so far reach the disk: what a FULL commit does inside the lock,
        done outside it, so other writers of this process need not wait for the disk.

        In WAL mode a commit is in the WAL file once ``COMMIT`` returns (a crash of the
        process keeps it); syncing that file makes it survive a power cut too. A
        checkpoint syncs the WAL before it copies it, so what it moved was synced already.
        """
        with self._wal_lock:
            if self._wal_fd is None:
                self._wal_fd = os.open(self.path.with_name(self.path.name + "-wal"), os.O_RDONLY)
            fd = self._wal_fd
        os.fsync(fd)

    def close(self) -> None:
        with self._wal_lock:
            fd, self._wal_fd = self._wal_fd, None
        if fd is not None:
            os.close(fd)
        with self._reader_lock:
            reader, self._reader = self._reader, None
            self._closed = True
        if reader is not None:
            reader.close()
        self.conn.close()


_open: dict[Path, SharedConnection] = {}
_registry = threading.Lock()


def connect(path: Path) -> sqlite3.Connection:
    """A connection for any component: autocommit, WAL, foreign keys, rows by name."""
    conn = sqlite3.connect(
        str(path), timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False, isolation_level=None
    )
    try:
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS:d}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
    except BaseException:
        conn.close()
        raise
    return conn


def acquire(
    path: Path, component: str, prepare: Callable[[sqlite3.Connection], None]
) -> SharedConnection:
    """The shared connection to ``path``, opened if needed, with ``component``'s tables ready.

    ``prepare`` runs once per component and connection, under the lock; if it
    fails, nothing is held and the error propagates.
    """
    key = path.resolve()
    pid = os.getpid()
    with _registry:
        shared = _open.get(key)
        if shared is None or shared.pid != pid:
            conn = connect(key)
            wal = conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            shared = SharedConnection(conn, key, pid, wal=wal)
            _open[key] = shared
        shared.users += 1
    try:
        if component not in shared.prepared:  # once prepared, never again: no lock to wait for
            with shared.lock:
                if component not in shared.prepared:
                    prepare(shared.conn)
                    shared.prepared.add(component)
    except BaseException:
        release(shared)
        raise
    return shared


def release(shared: SharedConnection) -> None:
    """Let go of ``shared``; the last user closes the connection."""
    with _registry:
        shared.users -= 1
        if shared.users > 0:
            return
        if _open.get(shared.path) is shared:
            del _open[shared.path]
    with shared.lock:
        shared.close()

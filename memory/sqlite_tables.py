"""A few tables of one component in the shared ``state.db``, behind one locked connection.

Several components keep small tables beside the transcripts (job ledger,
staged memory writes, the gateway's access and audit tables). In one process
they share one connection per file (``memory.sqlite_shared``), WAL mode, behind
one lock — SQLite serialises writers across processes — each creates its own
tables if missing and goes through ``_locked()``.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Self

from memory.errors import SessionDBError
from memory.sqlite_shared import BUSY_TIMEOUT_MS, SharedConnection, acquire, release

__all__ = ["BUSY_TIMEOUT_MS", "SQLiteTables", "private_database"]

logger = logging.getLogger(__name__)


def private_database(path: Path) -> None:
    """Make sure ``path`` (and its WAL and SHM files) can be read by this user only.

    A new file is created empty with mode 0600 before SQLite opens it; SQLite
    gives the WAL and SHM files the database's mode. An existing file that
    others could read is closed to them.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        os.close(fd)
    for one in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            mode = one.stat().st_mode & 0o777
            if mode & 0o077:
                one.chmod(mode & 0o700)
                logger.info("%s was readable by others; now %o", one.name, mode & 0o700)
        except FileNotFoundError:
            continue


class SQLiteTables:
    """Subclasses set ``SCHEMA`` (CREATE … IF NOT EXISTS statements) and may set ``ERROR``.

    ``SYNCHRONOUS`` is the ``PRAGMA synchronous`` of this component's writes: FULL
    (each commit reaches the disk) unless a subclass can afford NORMAL.
    """

    SCHEMA: tuple[str, ...] = ()
    ERROR: type[Exception] = SessionDBError
    WHAT = "database"
    SYNCHRONOUS = "FULL"

    def __init__(self, path: Path) -> None:
        self._path = Path(path)
        try:
            private_database(self._path)
            self._shared: SharedConnection | None = acquire(
                self._path, f"{type(self).__module__}.{type(self).__qualname__}", self._prepare
            )
        except (OSError, sqlite3.Error) as exc:
            raise self.ERROR(f"cannot open {self.WHAT} in {path}: {exc}") from exc
        self._lock = self._shared.lock
        self._conn: sqlite3.Connection | None = self._shared.conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """Create this component's tables if missing (once per connection)."""
        try:
            for statement in self.SCHEMA:
                conn.execute(statement)
        except sqlite3.Error as exc:
            raise self.ERROR(f"cannot prepare the {self.WHAT} in {self._path}: {exc}") from exc

    @property
    def path(self) -> Path:
        return self._path

    def close(self) -> None:
        """Let go of the connection; closing twice is harmless."""
        with self._lock:
            shared, self._shared, self._conn = self._shared, None, None
        if shared is not None:
            release(shared)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _begin(self, conn: sqlite3.Connection) -> None:
        """Start a write transaction at this component's ``SYNCHRONOUS`` level."""
        if self._shared is not None:
            self._shared.set_synchronous(self.SYNCHRONOUS)
        conn.execute("BEGIN IMMEDIATE")

    @contextmanager
    def _locked(self, *, write: bool = False) -> Iterator[sqlite3.Connection]:
        """The connection under the lock; ``write`` wraps the block in one transaction."""
        with self._lock:
            if self._conn is None:
                raise self.ERROR(f"the {self.WHAT} is closed")
            conn = self._conn
            try:
                if not write:
                    yield conn
                    return
                self._begin(conn)
                try:
                    yield conn
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                logger.warning("%s operation failed: %s", self.WHAT, exc)
                raise self.ERROR(f"{self.WHAT} error: {exc}") from exc

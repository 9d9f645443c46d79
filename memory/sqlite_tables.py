"""A few tables of one component in the shared ``state.db``, behind one locked connection.

Several components keep small tables beside the transcripts (job ledger,
staged memory writes, the gateway's access and audit tables). Each opens its
own connection in WAL mode — SQLite serialises writers across connections and
processes — creates its own tables if missing, and goes through ``_locked()``.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Self

from memory.errors import SessionDBError

logger = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 5000
"""How long a statement waits for another connection's lock before failing."""


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
    """Subclasses set ``SCHEMA`` (CREATE … IF NOT EXISTS statements) and may set ``ERROR``."""

    SCHEMA: tuple[str, ...] = ()
    ERROR: type[Exception] = SessionDBError
    WHAT = "database"

    def __init__(self, path: Path) -> None:
        self._path = Path(path)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = self._open(self._path)

    def _open(self, path: Path) -> sqlite3.Connection:
        """Connect in WAL mode and create this component's tables if missing."""
        try:
            private_database(path)
            conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise self.ERROR(f"cannot open {self.WHAT} in {path}: {exc}") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode = WAL")
            for statement in self.SCHEMA:
                conn.execute(statement)
        except sqlite3.Error as exc:
            conn.close()
            raise self.ERROR(f"cannot prepare the {self.WHAT} in {path}: {exc}") from exc
        return conn

    @property
    def path(self) -> Path:
        return self._path

    def close(self) -> None:
        """Close the connection; closing twice is harmless."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

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
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                logger.warning("%s operation failed: %s", self.WHAT, exc)
                raise self.ERROR(f"{self.WHAT} error: {exc}") from exc

"""A few tables of one component in the shared ``state.db``, behind one locked connection.

Several components keep small tables beside the transcripts (job ledger,
staged memory writes, the gateway's access and audit tables). Each opens its
own connection in WAL mode — SQLite serialises writers across connections and
processes — creates its own tables if missing, and goes through ``_locked()``.
"""

from __future__ import annotations

import logging
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
            path.parent.mkdir(parents=True, exist_ok=True)
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

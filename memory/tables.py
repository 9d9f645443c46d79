"""A few tables of one component, in the shared ``state.db`` or in PostgreSQL.

Several components keep small tables beside the transcripts (job ledger,
staged memory writes, the gateway's access and audit tables). Each creates its
own tables if missing and goes through ``_locked()``, which hands it a
connection (``memory.database.Connection``) inside one transaction.

- SQLite (a ``Path``): one connection per file per process
  (``memory.sqlite_shared``), WAL mode, behind one lock; SQLite serialises
  writers across processes.
- PostgreSQL (a ``postgresql://`` URL): a pooled connection per operation
  (``memory.database._postgres``); PostgreSQL serialises what conflicts. A
  component whose SQLite schema does not suit PostgreSQL sets ``SCHEMA_PG``.

Both engines' errors meet here: each leaves ``_locked()`` (and the opening) as a
``memory.errors.DatabaseError`` (``memory.database.sqlite_errors`` for SQLite,
the pool's own mapping for PostgreSQL), which becomes the component's ``ERROR``.

A full disk or an unreachable database is a *storage fault*: one ERROR line per
database (then at most one a minute), and ``storage_fault()`` names it until a
write there succeeds again (``/readyz`` reports it).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self

from memory.database import (
    Connection,
    Location,
    close_pool,
    is_postgres,
    open_pool,
    safe_location,
    sqlite_errors,
)
from memory.errors import DatabaseError, DatabaseFull, DatabaseUnavailable, SessionDBError
from memory.sqlite_shared import BUSY_TIMEOUT_MS, SharedConnection, acquire, release

if TYPE_CHECKING:
    from memory.database import PostgresPool

__all__ = ["BUSY_TIMEOUT_MS", "Tables", "private_database", "storage_fault"]

logger = logging.getLogger(__name__)

FAULT_LOG_INTERVAL = 60.0
"""Seconds between two log lines about one database that stays full or unreachable."""

_faults: dict[str, str] = {}
"""Database (file or safe URL) -> why its last write failed: full or unreachable."""
_fault_logged: dict[str, float] = {}
_faults_lock = threading.Lock()


def storage_fault(where: Location) -> str | None:
    """Why this process could not write the database at ``where`` last time it tried
    (its disk is full, it is down), or None when all is well (readiness reports it)."""
    with _faults_lock:
        return _faults.get(safe_location(where))


def _fault(where: str, what: str, exc: DatabaseUnavailable) -> None:
    """Note a storage fault; one ERROR line when it begins, then at most one a minute."""
    now = time.monotonic()
    with _faults_lock:
        new = where not in _faults
        _faults[where] = str(exc)
        due = new or now - _fault_logged.get(where, 0.0) >= FAULT_LOG_INTERVAL
        if due:
            _fault_logged[where] = now
    if not due:
        return
    if isinstance(exc, DatabaseFull):
        logger.error(
            "disk full: the %s in %s cannot be written (%s); free space on that disk, "
            "what waits is taken up then",
            what,
            where,
            exc,
        )
    else:
        logger.error("the %s in %s cannot be used (%s)", what, where, exc)


def _recovered(where: str, what: str) -> None:
    with _faults_lock:
        gone = _faults.pop(where, None)
        _fault_logged.pop(where, None)
    if gone is not None:
        logger.info("the %s in %s can be written again", what, where)


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


class Tables:
    """Subclasses set ``SCHEMA`` (CREATE … IF NOT EXISTS statements) and may set ``ERROR``.

    ``SCHEMA_PG`` replaces ``SCHEMA`` on PostgreSQL where the two differ.
    ``SYNCHRONOUS`` is the SQLite ``PRAGMA synchronous`` of this component's
    writes: FULL (each commit reaches the disk) unless a subclass can afford
    NORMAL. In WAL mode a FULL write commits at NORMAL under the lock and syncs
    the WAL file after letting it go, before it returns: the caller has the same
    guarantee, and the other writers of the process do not wait for its disk.
    (PostgreSQL commits are durable as the server is configured.)
    """

    SCHEMA: tuple[str, ...] = ()
    SCHEMA_PG: tuple[str, ...] | None = None
    ERROR: type[Exception] = SessionDBError
    WHAT = "database"
    SYNCHRONOUS = "FULL"

    def __init__(self, where: Location, *, pool_size: int | None = None) -> None:
        self._where: Location = where
        self._path = Path(where) if isinstance(where, Path) else Path("postgresql")
        self._shared: SharedConnection | None = None
        self._conn: sqlite3.Connection | None = None
        self._pg: PostgresPool | None = None
        self._lock = threading.RLock()
        component = f"{type(self).__module__}.{type(self).__qualname__}"
        if is_postgres(where):
            self._open_postgres(str(where), component, pool_size)
            return
        try:
            private_database(self._path)
            with sqlite_errors():
                self._shared = acquire(self._path, component, self._prepare)
        except (OSError, DatabaseError) as exc:
            raise self.ERROR(f"cannot open {self.WHAT} in {where}: {exc}") from exc
        self._lock = self._shared.lock
        self._conn = self._shared.conn

    def _open_postgres(self, url: str, component: str, pool_size: int | None) -> None:
        try:
            self._pg = open_pool(url, size=pool_size)
        except DatabaseError as exc:
            raise self.ERROR(f"cannot open {self.WHAT} in {safe_location(url)}: {exc}") from exc
        try:
            self._prepare_postgres(self._pg)
        except DatabaseError as exc:
            close_pool(self._pg)
            self._pg = None
            raise self.ERROR(f"cannot prepare the {self.WHAT} in PostgreSQL: {exc}") from exc

    def _prepare_postgres(self, pool: PostgresPool) -> None:
        """Create this component's tables in PostgreSQL if missing (once per pool)."""
        component = f"{type(self).__module__}.{type(self).__qualname__}"
        pool.prepare(component, self.SCHEMA if self.SCHEMA_PG is None else self.SCHEMA_PG)

    @property
    def is_postgres(self) -> bool:
        return self._pg is not None

    @property
    def location(self) -> Location:
        return self._where

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
            pg, self._pg = self._pg, None
        if shared is not None:
            release(shared)
        if pg is not None:
            close_pool(pg)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _begin(self, conn: sqlite3.Connection) -> bool:
        """Start a write transaction at this component's ``SYNCHRONOUS`` level; True when
        its WAL is to be synced after the lock is let go (``SharedConnection.sync_wal``)."""
        later = False
        if self._shared is not None:
            later = self.SYNCHRONOUS == "FULL" and self._shared.wal
            self._shared.set_synchronous("NORMAL" if later else self.SYNCHRONOUS)
        conn.execute("BEGIN IMMEDIATE")
        return later

    def sync(self) -> None:
        """Make every commit made so far to this database survive a power cut (what a
        ``durable=False`` write leaves to be done; a crash of the process keeps it
        already). Nothing to do on PostgreSQL, whose commits are durable."""
        with self._lock:
            shared = self._shared
        if shared is not None and shared.wal:
            self._sync(shared)

    @contextmanager
    def _locked(self, *, write: bool = False, durable: bool = True) -> Iterator[Connection]:
        """The connection under the lock; ``write`` wraps the block in one transaction.

        On PostgreSQL every block is one transaction on a pooled connection.
        ``durable=False``: a FULL component's commit in WAL mode is not synced yet; the
        caller calls ``sync()`` before it relies on it surviving a power cut.
        """
        if self._pg is not None:
            where = safe_location(self._where)
            try:
                with self._pg.transaction() as pg:
                    yield pg
            except DatabaseError as exc:
                raise self._failed(where, exc) from exc
            if write:
                _recovered(where, self.WHAT)
            return
        shared = self._shared
        with self._lock if shared is None else shared.held():
            if self._conn is None:
                raise self.ERROR(f"the {self.WHAT} is closed")
            conn, shared = self._conn, self._shared
            try:
                with sqlite_errors():
                    if not write:
                        yield conn
                        return
                    changes = conn.total_changes
                    sync_later = self._begin(conn)
                    try:
                        yield conn
                    except BaseException:
                        if conn.in_transaction:  # SQLite ends it itself on a full disk
                            conn.execute("ROLLBACK")
                        raise
                    conn.execute("COMMIT")
                    written = conn.total_changes != changes
            except DatabaseError as exc:
                raise self._failed(str(self._path), exc) from exc
        if written and sync_later and durable and shared is not None:
            self._sync(shared)
        if written:  # written for real: the disk took it
            _recovered(str(self._path), self.WHAT)

    @contextmanager
    def _reading(self) -> Iterator[Connection]:
        """``_locked()`` for a block that only reads, on the hot path of every message: on
        SQLite in WAL mode a connection of its own that never waits for this process's
        writers (``SharedConnection.reading``)."""
        shared = self._shared
        if shared is None:
            with self._locked() as conn:  # PostgreSQL, or closed
                yield conn
            return
        try:
            with sqlite_errors(), shared.reading() as reader:
                yield reader
        except DatabaseError as exc:
            raise self._failed(str(self._path), exc) from exc

    def _sync(self, shared: SharedConnection) -> None:
        """The WAL synced, outside the lock (the durability of a FULL commit)."""
        try:
            shared.sync_wal()
        except OSError as exc:
            failure = DatabaseUnavailable(f"syncing the WAL failed: {exc}")
            raise self._failed(str(self._path), failure) from exc

    def _failed(self, where: str, exc: DatabaseError) -> Exception:
        """The component's error for ``exc``, logged: a full disk or an unreachable
        database as a storage fault (readiness fails until a write succeeds)."""
        if isinstance(exc, DatabaseUnavailable):
            _fault(where, self.WHAT, exc)
        else:
            logger.warning("%s operation failed: %s", self.WHAT, exc)
        return self.ERROR(f"{self.WHAT} error: {exc}")

"""How SessionDB reads and writes: one transaction per write, or one for a batch of them.

A batch (``Transactions.batch()``) opens one ``BEGIN IMMEDIATE`` transaction; every
write inside it is a savepoint, so a write that fails is undone alone and the
others still commit, together, with one ``COMMIT``. That is group commit:
``AsyncSessionDB`` runs the writes that queued up meanwhile as one batch.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from memory.database import Connection, sqlite_errors
from memory.errors import DatabaseError, SessionDBError
from memory.tables import Tables

if TYPE_CHECKING:
    from memory.database import PgConnection

__all__ = ["Transactions"]

logger = logging.getLogger(__name__)


class Transactions(Tables):
    """``_read``, ``_write`` and ``batch`` over the (shared, locked) connection.

    On PostgreSQL each read and write is one transaction on a pooled connection,
    and a batch holds one connection (for its thread) until it commits.
    """

    _batching: threading.Thread | None = None
    """The thread whose batch is open (the lock keeps every other thread out)."""
    _pg_batch: tuple[threading.Thread, PgConnection] | None = None

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise SessionDBError(f"session database {self._path} is closed")
        return self._conn

    @contextmanager
    def _pg_transaction(self) -> Iterator[Connection]:
        """PostgreSQL: the batch's connection on its thread, else a transaction of its own."""
        batch = self._pg_batch
        if batch is not None and batch[0] is threading.current_thread():
            with batch[1].savepoint():
                yield batch[1]
            return
        if self._pg is None:
            raise SessionDBError("session database is closed")
        with self._pg.transaction() as conn:
            yield conn

    @contextmanager
    def _pg_wrapped(self, what: str) -> Iterator[Connection]:
        try:
            with self._pg_transaction() as conn:
                yield conn
        except DatabaseError as exc:
            raise SessionDBError(f"session database {what} failed: {exc}") from exc

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        if self._pg is not None:
            with self._pg_wrapped("query") as conn:
                yield conn
            return
        with self._lock:
            try:
                with sqlite_errors():
                    yield self._connection()
            except DatabaseError as exc:
                raise SessionDBError(f"session database query failed: {exc}") from exc

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """One ``BEGIN IMMEDIATE`` transaction, committed on success, rolled back otherwise;
        inside a batch, a savepoint of the batch's transaction."""
        if self._pg is not None:
            with self._pg_wrapped("write") as conn:
                yield conn
            return
        with self._lock:
            conn = self._connection()
            if self._batching is threading.current_thread():
                if not conn.in_transaction:  # an earlier write's error ended it
                    raise SessionDBError("session database write failed: its batch was undone")
                with self._savepoint(conn):
                    yield conn
                return
            with self._transaction(conn):
                yield conn

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Every write in the block joins one transaction, committed once at the end.

        A write that raises is undone alone (its savepoint); if the commit fails,
        none of the writes happened and ``SessionDBError`` is raised.
        """
        if self._pg is not None:
            with self._pg_batch_of_thread():
                yield
            return
        with self._lock:
            conn = self._connection()
            if self._batching is threading.current_thread():
                yield  # already in one
                return
            with self._transaction(conn):
                self._batching = threading.current_thread()
                try:
                    yield
                finally:
                    self._batching = None

    @contextmanager
    def _pg_batch_of_thread(self) -> Iterator[None]:
        here = threading.current_thread()
        if self._pg_batch is not None and self._pg_batch[0] is here:
            yield
            return
        if self._pg is None:
            raise SessionDBError("session database is closed")
        try:
            with self._lock, self._pg.transaction() as conn:  # one batch at a time
                self._pg_batch = (here, conn)
                try:
                    yield
                finally:
                    self._pg_batch = None
        except DatabaseError as exc:
            raise SessionDBError(f"session database write failed: {exc}") from exc

    @contextmanager
    def _transaction(self, conn: sqlite3.Connection) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``; rolled back (and SQLite errors wrapped) on failure."""
        try:
            with sqlite_errors():
                self._begin(conn)
                yield
                conn.execute("COMMIT")
        except BaseException as exc:
            _rollback(conn)
            if isinstance(exc, DatabaseError):
                raise SessionDBError(f"session database write failed: {exc}") from exc
            raise

    @contextmanager
    def _savepoint(self, conn: sqlite3.Connection) -> Iterator[None]:
        conn.execute("SAVEPOINT one_write")
        try:
            with sqlite_errors():
                yield
        except BaseException as exc:
            try:
                conn.execute("ROLLBACK TO one_write")
                conn.execute("RELEASE one_write")
            except sqlite3.Error as undo:  # SQLite's own bookkeeping, not a statement's
                logger.debug("session db savepoint rollback failed: %s", undo)
            if isinstance(exc, DatabaseError):
                raise SessionDBError(f"session database write failed: {exc}") from exc
            raise
        try:
            with sqlite_errors():
                conn.execute("RELEASE one_write")
        except DatabaseError as exc:
            raise SessionDBError(f"session database write failed: {exc}") from exc


def _rollback(conn: sqlite3.Connection) -> None:
    if not conn.in_transaction:
        return
    try:
        conn.execute("ROLLBACK")
    except sqlite3.Error as exc:
        logger.debug("session db rollback failed: %s", exc)

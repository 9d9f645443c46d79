"""PostgreSQL behind the same small connection interface as SQLite (psycopg 3, a pool).

The components that keep tables (transcripts, inbox, access, staged writes,
job ledger, outbox, provider health) write their SQL once, in the subset both
engines speak: ``?`` placeholders, ``INSERT … ON CONFLICT``, ``RETURNING``,
``IS ?`` for a comparison that treats NULL as a value. ``PgConnection``
translates that subset for PostgreSQL (``%s``, ``IS NOT DISTINCT FROM``) and
hands rows that answer both ``row[0]`` and ``row["name"]``, like
``sqlite3.Row``. Errors come out as ``memory.errors.DatabaseError``s, as SQLite's
do (``DatabaseIntegrityError`` for a violated constraint, ``DatabaseLocked`` for a
lock timeout, deadlock or serialization failure, ``DatabaseUnavailable`` when no
connection can be had), so a component catches one vocabulary whatever the
backend; the driver's first line is kept.

One pool per URL per process, shared by every component, opened on first use
and closed with the last user. A forked process opens its own. A pooled
connection is checked before it is handed out (a restarted server leaves dead
ones behind), and a server that comes back after an outage is used by the next
operation (``RECONNECT_GIVE_UP``).
"""

from __future__ import annotations

import logging
import os
import re
import select
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import IO, Any

import psycopg
import psycopg.errors
import psycopg_pool
from psycopg.rows import RowMaker

from memory.database._errors import first_line
from memory.database._types import lock_schema
from memory.errors import (
    DatabaseError,
    DatabaseFull,
    DatabaseIntegrityError,
    DatabaseLocked,
    DatabaseUnavailable,
)

__all__ = [
    "OwnConnection",
    "PgConnection",
    "PgCursor",
    "PgRow",
    "PostgresPool",
    "acquire_pool",
    "own_connection",
    "release_pool",
]

logger = logging.getLogger(__name__)
logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
"""The pool logs a WARNING for every reconnect attempt while the server is down; the
component that needed the connection logs the outage once (``memory.tables``)."""

CONNECT_TIMEOUT = 10.0
"""Seconds to wait for a connection from the pool before the operation fails."""

RECONNECT_GIVE_UP = 3.0
"""Seconds the pool goes on replacing a lost connection in the background (1 s, then
2 s apart). Its retries back off to minutes; past this the next operation that needs a
connection makes one at once, so a server that is back serves the next request."""

_PLACEHOLDER = re.compile(r"'(?:[^']|'')*'|\bIS\s+NOT\s+\?|\bIS\s+\?|\?|%")
"""Quoted literals (kept), ``IS [NOT] ?``, ``?`` and ``%`` outside them."""


def translate(sql: str) -> str:
    """The SQLite-style ``sql`` for psycopg: ``?`` → ``%s``, ``IS ?`` → ``IS NOT DISTINCT FROM``."""

    def one(match: re.Match[str]) -> str:
        text = match.group(0)
        if text.startswith("'"):
            return text.replace("%", "%%")
        if text == "?":
            return "%s"
        if text == "%":
            return "%%"
        if "NOT" in text.upper():
            return "IS DISTINCT FROM %s"
        return "IS NOT DISTINCT FROM %s"

    return _PLACEHOLDER.sub(one, sql)


class PgRow(tuple[Any, ...]):
    """A result row: by position or by column name, like ``sqlite3.Row``."""

    _names: dict[str, int]

    def __new__(cls, values: Sequence[Any], names: dict[str, int]) -> PgRow:
        row = super().__new__(cls, values)
        row._names = names
        return row

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._names[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


def _pg_rows(cursor: psycopg.Cursor[Any]) -> RowMaker[PgRow]:
    description = cursor.description or ()
    names = {column.name: index for index, column in enumerate(description)}

    def make(values: Sequence[Any]) -> PgRow:
        return PgRow(values, names)

    return make


_LOCKED = (
    psycopg.errors.LockNotAvailable,
    psycopg.errors.DeadlockDetected,
    psycopg.errors.SerializationFailure,
)


def as_database_error(exc: psycopg.Error) -> DatabaseError:
    """The ``DatabaseError`` a component expects for this driver error."""
    text = first_line(exc)
    if isinstance(exc, psycopg.errors.IntegrityError):
        return DatabaseIntegrityError(text)
    if isinstance(exc, _LOCKED):
        return DatabaseLocked(text)
    if isinstance(exc, psycopg.errors.DiskFull):
        return DatabaseFull(text)
    if isinstance(exc, psycopg.errors.QueryCanceled):
        return DatabaseError(text)
    if isinstance(exc, psycopg.OperationalError):  # the connection, the server's resources
        return DatabaseUnavailable(text)
    return DatabaseError(text)


class PgCursor:
    """The result of one statement: ``fetchone``, ``fetchall``, ``rowcount``, iteration."""

    def __init__(self, cursor: psycopg.Cursor[PgRow]) -> None:
        self._cursor = cursor

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    def fetchone(self) -> PgRow | None:
        if self._cursor.description is None:
            return None
        return self._cursor.fetchone()

    def fetchall(self) -> list[PgRow]:
        if self._cursor.description is None:
            return []
        return self._cursor.fetchall()

    def __iter__(self) -> Iterator[PgRow]:
        return iter(self.fetchall())


class PgConnection:
    """One pooled connection inside one transaction; SQLite-style ``execute``."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.raw = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> PgCursor:
        cursor = self.raw.cursor(row_factory=_pg_rows)
        try:
            cursor.execute(translate(sql), tuple(params) if params else None)
        except psycopg.Error as exc:
            raise as_database_error(exc) from exc
        return PgCursor(cursor)

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """A savepoint around the block: an error undoes the block alone, then propagates."""
        try:
            with self.raw.transaction():
                yield
        except psycopg.Error as exc:
            raise as_database_error(exc) from exc

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        try:
            with self.raw.cursor() as cursor:
                cursor.executemany(translate(sql), [tuple(row) for row in rows])
        except psycopg.Error as exc:
            raise as_database_error(exc) from exc


@dataclass(eq=False)
class PostgresPool:
    """A psycopg pool and the components whose schema is ready on it."""

    pool: psycopg_pool.ConnectionPool[psycopg.Connection[Any]]
    url: str
    pid: int
    users: int = 0
    prepared: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @contextmanager
    def transaction(self) -> Iterator[PgConnection]:
        """A connection in one transaction: committed when the block ends, rolled back on error."""
        try:
            with self.pool.connection(timeout=CONNECT_TIMEOUT) as conn, conn.transaction():
                yield PgConnection(conn)
        except psycopg.Error as exc:
            raise as_database_error(exc) from exc
        except psycopg_pool.PoolTimeout as exc:
            raise DatabaseUnavailable(f"no PostgreSQL connection: {exc}") from exc

    @contextmanager
    def schema_transaction(self) -> Iterator[PgConnection]:
        """A transaction holding the schema lock, for creating or migrating tables.

        Every component's schema work on every replica and worker takes the same
        lock, so it runs one at a time however many processes start at once.
        """
        with self.transaction() as conn:
            lock_schema(conn)
            yield conn

    def prepare(self, component: str, statements: Sequence[str]) -> None:
        """Run ``component``'s schema statements once per pool, under the schema lock."""
        with self.lock:
            if component in self.prepared:
                return
            with self.schema_transaction() as conn:
                for statement in statements:
                    conn.execute(statement)
            self.prepared.add(component)


class OwnConnection:
    """A connection outside the pool, for long reads and bulk loads (``_snapshot``):
    autocommit, except inside ``transaction()``; rows stream with ``COPY``."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def rows(self, statement: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one statement (psycopg's ``%s`` placeholders, not ``?``)."""
        return [tuple(row) for row in self._conn.execute(statement, tuple(params)).fetchall()]

    def run(self, statement: str, params: Sequence[Any] = ()) -> None:
        self._conn.execute(statement, tuple(params))

    def transaction(self) -> AbstractContextManager[object]:
        return self._conn.transaction()

    def copy_out(self, statement: str) -> Iterator[bytes]:
        """The blocks a ``COPY … TO STDOUT`` statement sends."""
        with self._conn.cursor().copy(statement) as copy:
            for block in copy:
                yield bytes(block)

    def copy_in(self, statement: str, source: IO[bytes]) -> None:
        """Send everything ``source`` holds to a ``COPY … FROM STDIN`` statement."""
        with self._conn.cursor().copy(statement) as copy:
            while block := source.read(1 << 16):
                copy.write(block)


@contextmanager
def own_connection(url: str) -> Iterator[OwnConnection]:
    """A connection of its own to ``url``; the driver's errors leave as ``DatabaseError``s."""
    _probe(url)
    try:
        with psycopg.connect(url, connect_timeout=int(CONNECT_TIMEOUT), autocommit=True) as conn:
            yield OwnConnection(conn)
    except psycopg.Error as exc:
        raise as_database_error(exc) from exc


_pools: dict[str, PostgresPool] = {}
_registry = threading.Lock()


def acquire_pool(url: str, *, size: int = 10) -> PostgresPool:
    """The shared pool of ``url`` in this process, opened if needed (fails if unreachable)."""
    pid = os.getpid()
    with _registry:
        shared = _pools.get(url)
        if shared is None or shared.pid != pid:
            _probe(url)
            pool: psycopg_pool.ConnectionPool[psycopg.Connection[Any]] = (
                psycopg_pool.ConnectionPool(
                    url,
                    min_size=1,
                    max_size=max(size, 1),
                    open=False,
                    check=check_connection,
                    reconnect_timeout=RECONNECT_GIVE_UP,
                    kwargs={"connect_timeout": int(CONNECT_TIMEOUT)},
                    name="chorus",
                )
            )
            try:
                pool.open(wait=True, timeout=CONNECT_TIMEOUT)
            except psycopg_pool.PoolTimeout as exc:
                pool.close()
                raise DatabaseUnavailable(f"cannot connect to PostgreSQL at {_safe(url)}") from exc
            shared = PostgresPool(pool, url, pid)
            _pools[url] = shared
        shared.users += 1
    return shared


def check_connection(conn: psycopg.Connection[Any]) -> None:
    """The pool's check of a connection before it hands it out: a round trip to the
    server only when the connection may be broken. An idle connection has nothing to
    read unless the server wrote to it: closing it (a restart, an administrator, an
    idle timeout) or a notice; then the server is asked (``ConnectionPool``'s own
    check), which raises when the connection is dead, and the pool takes another."""
    if not conn.closed:
        poller = select.poll()
        poller.register(conn.fileno(), select.POLLIN | select.POLLERR | select.POLLHUP)
        if not poller.poll(0):
            return
    psycopg_pool.ConnectionPool.check_connection(conn)


def release_pool(shared: PostgresPool) -> None:
    """Let go of ``shared``; the last user closes the pool."""
    with _registry:
        shared.users -= 1
        if shared.users > 0:
            return
        if _pools.get(shared.url) is shared:
            del _pools[shared.url]
    if shared.pid == os.getpid():
        shared.pool.close()


def _probe(url: str) -> None:
    """Connect once, so that a wrong URL fails at once with the server's reason."""
    try:
        psycopg.connect(url, connect_timeout=int(CONNECT_TIMEOUT)).close()
    except psycopg.Error as exc:
        reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        where = _safe(url)
        raise DatabaseUnavailable(f"cannot connect to PostgreSQL at {where}: {reason}") from exc


def _safe(url: str) -> str:
    """``url`` without its password, for a message."""
    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)

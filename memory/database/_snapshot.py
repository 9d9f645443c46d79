"""Chorus's tables in PostgreSQL, read as of one instant and written back into an empty database.

``read_snapshot`` opens one connection in a ``REPEATABLE READ, READ ONLY,
DEFERRABLE`` transaction: every table is read as of the snapshot its first
statement takes, so rows written meanwhile by gateways and workers are either
wholly in the copy or wholly out of it (a message and its session's counters,
a job and its ledger row), and nothing is locked but what ``ACCESS SHARE``
holds. Each table's rows stream out with ``COPY … TO STDOUT`` in PostgreSQL's
own text format (one row a line, tab-separated, ``\\N`` for NULL), which every
PostgreSQL version reads back exactly: bytes, floats (shortest exact digits),
text with tabs and newlines escaped. Generated columns (the search vector) are
left out; PostgreSQL computes them again on the way in.

``load_snapshot`` writes such rows into tables chorus has created in the target
(the archive brings data, never SQL), in one transaction, after checking that
no table there holds a row yet; parents before the tables whose foreign keys
name them, identity columns moved past the ids restored (and past the
sequence's value in the source), so new rows never collide with restored ones.
Any failure rolls the whole load back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

import psycopg
from psycopg import sql

from memory.database._errors import first_line
from memory.database._postgres import CONNECT_TIMEOUT, _probe, _safe
from memory.database._types import TableRows
from memory.errors import DatabaseCopyError

__all__ = ["Snapshot", "TableRows", "filled_tables", "load_snapshot", "read_snapshot"]

logger = logging.getLogger(__name__)

VERSIONS_TABLE = "chorus_schema"
"""Each component's schema version: recorded in the manifest, made by the restore."""

_SESSION_SETTINGS = (
    "SET client_encoding TO 'UTF8'",
    "SET extra_float_digits TO 3",  # exact floats from servers older than 12 as well
)


@contextmanager
def _connect(url: str) -> Iterator[psycopg.Connection[Any]]:
    """A connection of its own (not the pool's), in autocommit until a block opens one."""
    _probe(url)
    try:
        with psycopg.connect(url, connect_timeout=int(CONNECT_TIMEOUT), autocommit=True) as conn:
            for statement in _SESSION_SETTINGS:
                conn.execute(statement)
            yield conn
    except psycopg.Error as exc:
        raise DatabaseCopyError(f"PostgreSQL {_safe(url)}: {first_line(exc)}") from exc


class Snapshot:
    """The tables of one database as of one instant; ``copy_out`` streams one table."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn
        row = conn.execute("SELECT current_setting('server_version')").fetchone()
        self.server_version = "" if row is None else str(row[0])
        self.tables = _tables(conn)
        self.schema_versions = self._versions()

    def _versions(self) -> dict[str, int]:
        if VERSIONS_TABLE not in {t.name for t in self.tables}:
            return {}
        rows = self._conn.execute(
            sql.SQL("SELECT component, version FROM {}").format(sql.Identifier(VERSIONS_TABLE))
        ).fetchall()
        return {str(component): int(version) for component, version in rows}

    def select(self, table: str, columns: list[str]) -> list[tuple[Any, ...]]:
        """Every row of ``table`` (its ``columns``) as of the snapshot, in their order;
        nothing when the database has no such table."""
        if table not in {t.name for t in self.tables}:
            return []
        statement = sql.SQL("SELECT {} FROM {} ORDER BY {}").format(
            sql.SQL(", ").join(map(sql.Identifier, columns)),
            sql.Identifier(table),
            sql.SQL(", ").join(map(sql.Identifier, columns)),
        )
        return [tuple(row) for row in self._conn.execute(statement).fetchall()]

    def copy_out(self, table: TableRows, out: IO[bytes]) -> int:
        """Write ``table``'s rows to ``out`` (COPY text format); how many rows."""
        statement = sql.SQL("COPY {} ({}) TO STDOUT").format(
            sql.Identifier(table.name), sql.SQL(", ").join(map(sql.Identifier, table.columns))
        )
        rows = 0
        with self._conn.cursor().copy(statement) as copy:
            for block in copy:
                data = bytes(block)
                rows += data.count(b"\n")
                out.write(data)
        table.rows = rows
        return rows


@contextmanager
def read_snapshot(url: str) -> Iterator[Snapshot]:
    """A ``Snapshot`` of the current schema of ``url``, valid inside the block."""
    with _connect(url) as conn, conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY, DEFERRABLE")
        yield Snapshot(conn)


def _tables(conn: psycopg.Connection[Any]) -> list[TableRows]:
    """Every ordinary table of the current schema, its stored columns, its identity values."""
    rows = conn.execute(
        "SELECT c.relname, a.attname, a.attidentity <> '' AS is_identity"
        " FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid"
        " WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'"
        " AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''"
        " ORDER BY c.relname, a.attnum"
    ).fetchall()
    tables: dict[str, TableRows] = {}
    for table, column, is_identity in rows:
        one = tables.setdefault(str(table), TableRows(str(table), []))
        one.columns.append(str(column))
        if is_identity:
            one.identity[str(column)] = _sequence_value(conn, one.name, str(column))
    return list(tables.values())


def _sequence_value(conn: psycopg.Connection[Any], table: str, column: str) -> int:
    found = conn.execute("SELECT pg_get_serial_sequence(%s, %s)", (table, column)).fetchone()
    if found is None or found[0] is None:
        return 0
    state = conn.execute(
        sql.SQL("SELECT last_value, is_called FROM {}").format(
            sql.Identifier(*str(found[0]).split(".", 1))
        )
    ).fetchone()
    return int(state[0]) if state is not None and state[1] else 0


def filled_tables(url: str) -> dict[str, int]:
    """The tables of ``url``'s current schema holding rows, and how many (the versions left out)."""
    with _connect(url) as conn:
        return _filled(conn)


def _filled(conn: psycopg.Connection[Any]) -> dict[str, int]:
    filled: dict[str, int] = {}
    for table in _tables(conn):
        if table.name == VERSIONS_TABLE:
            continue
        row = conn.execute(
            sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table.name))
        ).fetchone()
        if row is not None and row[0]:
            filled[table.name] = int(row[0])
    return filled


def load_snapshot(
    url: str, tables: list[TableRows], open_rows: Callable[[TableRows], IO[bytes]]
) -> int:
    """Copy ``tables`` (rows from ``open_rows``) into the empty tables of ``url`` in one
    transaction; the rows written. ``DatabaseCopyError`` says why it was not done."""
    with _connect(url) as conn, conn.transaction():
        filled = _filled(conn)
        if filled:
            held = ", ".join(f"{name} ({rows} rows)" for name, rows in sorted(filled.items()))
            raise DatabaseCopyError(
                f"PostgreSQL {_safe(url)} is not empty: {held}; restore into an empty database"
            )
        theirs = {t.name: t for t in _tables(conn)}
        written = 0
        for table in _in_dependency_order(conn, tables):
            if table.name == VERSIONS_TABLE:
                continue  # made with the tables, at the backup's version
            target = theirs.get(table.name)
            if target is None:
                raise DatabaseCopyError(
                    f"the backup holds table {table.name}, which this chorus does not make; "
                    "restore it with the chorus that made the backup"
                )
            missing = [c for c in table.columns if c not in target.columns]
            if missing:
                raise DatabaseCopyError(
                    f"table {table.name} has no column {', '.join(missing)} here; "
                    "restore it with the chorus that made the backup"
                )
            written += _copy_in(conn, table, open_rows)
            for column in target.identity:
                _move_sequence(conn, table.name, column, table.identity.get(column, 0))
        return written


def _copy_in(
    conn: psycopg.Connection[Any], table: TableRows, open_rows: Callable[[TableRows], IO[bytes]]
) -> int:
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(table.name), sql.SQL(", ").join(map(sql.Identifier, table.columns))
    )
    source = open_rows(table)
    with conn.cursor().copy(statement) as copy:
        while block := source.read(1 << 16):
            copy.write(block)
    row = conn.execute(
        sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table.name))
    ).fetchone()
    count = 0 if row is None else int(row[0])
    if count != table.rows:
        raise DatabaseCopyError(
            f"table {table.name}: {count} rows restored, the backup lists {table.rows}"
        )
    logger.info("restored %d rows of %s", count, table.name)
    return count


def _move_sequence(conn: psycopg.Connection[Any], table: str, column: str, handed: int) -> None:
    """Move ``table.column``'s sequence past its restored values and the source's ``handed``."""
    row = conn.execute(
        sql.SQL("SELECT max({}) FROM {}").format(sql.Identifier(column), sql.Identifier(table))
    ).fetchone()
    highest = max(int(row[0]) if row is not None and row[0] is not None else 0, handed)
    if highest > 0:
        conn.execute("SELECT setval(pg_get_serial_sequence(%s, %s), %s)", (table, column, highest))


def _in_dependency_order(conn: psycopg.Connection[Any], tables: list[TableRows]) -> list[TableRows]:
    """``tables`` with every table after those its foreign keys reference, else by name."""
    edges = conn.execute(
        "SELECT c.conrelid::regclass::text, c.confrelid::regclass::text FROM pg_constraint c"
        " WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace"
    ).fetchall()
    needs: dict[str, set[str]] = {}
    for child, parent in edges:
        if child != parent:
            needs.setdefault(str(child), set()).add(str(parent))
    pending = sorted(tables, key=lambda t: t.name)
    ordered: list[TableRows] = []
    done: set[str] = set()
    while pending:
        ready = [t for t in pending if not (needs.get(t.name, set()) - done) & _names(pending)]
        if not ready:  # a cycle: leave the rest by name (the load then fails and says why)
            ready = pending[:1]
        for table in ready:
            ordered.append(table)
            done.add(table.name)
        pending = [t for t in pending if t.name not in done]
    return ordered


def _names(tables: list[TableRows]) -> set[str]:
    return {t.name for t in tables}

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

from memory.database._postgres import OwnConnection, _safe, own_connection
from memory.database._types import TableRows
from memory.errors import DatabaseCopyError

__all__ = ["Snapshot", "filled_tables", "load_snapshot", "read_snapshot"]

logger = logging.getLogger(__name__)

VERSIONS_TABLE = "chorus_schema"
"""Each component's schema version: recorded in the manifest, made by the restore."""

_SESSION_SETTINGS = (
    "SET client_encoding TO 'UTF8'",
    "SET extra_float_digits TO 3",  # exact floats from servers older than 12 as well
)


def quoted(name: str) -> str:
    """``name`` as an SQL identifier, whatever characters it holds."""
    return '"' + name.replace('"', '""') + '"'


def _column_list(columns: list[str]) -> str:
    return ", ".join(map(quoted, columns))


@contextmanager
def _connect(url: str) -> Iterator[OwnConnection]:
    with own_connection(url) as conn:
        for statement in _SESSION_SETTINGS:
            conn.run(statement)
        yield conn


class Snapshot:
    """The tables of one database as of one instant; ``copy_out`` streams one table."""

    def __init__(self, conn: OwnConnection) -> None:
        self._conn = conn
        [(version,)] = conn.rows("SELECT current_setting('server_version')")
        self.server_version = str(version)
        self.tables = _tables(conn)
        self.schema_versions = self._versions()

    def _versions(self) -> dict[str, int]:
        if VERSIONS_TABLE not in {t.name for t in self.tables}:
            return {}
        rows = self._conn.rows(f"SELECT component, version FROM {quoted(VERSIONS_TABLE)}")
        return {str(component): int(version) for component, version in rows}

    def select(self, table: str, columns: list[str]) -> list[tuple[Any, ...]]:
        """Every row of ``table`` (its ``columns``) as of the snapshot, in their order;
        nothing when the database has no such table."""
        if table not in {t.name for t in self.tables}:
            return []
        names = _column_list(columns)
        return self._conn.rows(f"SELECT {names} FROM {quoted(table)} ORDER BY {names}")

    def copy_out(self, table: TableRows, out: IO[bytes]) -> int:
        """Write ``table``'s rows to ``out`` (COPY text format); how many rows."""
        statement = f"COPY {quoted(table.name)} ({_column_list(table.columns)}) TO STDOUT"
        rows = 0
        for block in self._conn.copy_out(statement):
            rows += block.count(b"\n")
            out.write(block)
        table.rows = rows
        return rows


@contextmanager
def read_snapshot(url: str) -> Iterator[Snapshot]:
    """A ``Snapshot`` of the current schema of ``url``, valid inside the block."""
    with _connect(url) as conn, conn.transaction():
        conn.run("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY, DEFERRABLE")
        yield Snapshot(conn)


def _tables(conn: OwnConnection) -> list[TableRows]:
    """Every ordinary table of the current schema, its stored columns, its identity values."""
    rows = conn.rows(
        "SELECT c.relname, a.attname, a.attidentity <> '' AS is_identity"
        " FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid"
        " WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'"
        " AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''"
        " ORDER BY c.relname, a.attnum"
    )
    tables: dict[str, TableRows] = {}
    for table, column, is_identity in rows:
        one = tables.setdefault(str(table), TableRows(str(table), []))
        one.columns.append(str(column))
        if is_identity:
            one.identity[str(column)] = _sequence_value(conn, one.name, str(column))
    return list(tables.values())


def _sequence_value(conn: OwnConnection, table: str, column: str) -> int:
    """The last value the sequence of ``table.column`` handed out (0: none yet)."""
    [(sequence,)] = conn.rows("SELECT pg_get_serial_sequence(%s, %s)", (quoted(table), column))
    if sequence is None:
        return 0
    [(last, called)] = conn.rows(f"SELECT last_value, is_called FROM {sequence}")
    return int(last) if called else 0


def filled_tables(url: str) -> dict[str, int]:
    """The tables of ``url``'s current schema holding rows, and how many (the versions left out)."""
    with _connect(url) as conn:
        return _filled(conn)


def _filled(conn: OwnConnection) -> dict[str, int]:
    filled: dict[str, int] = {}
    for table in _tables(conn):
        if table.name == VERSIONS_TABLE:
            continue
        [(count,)] = conn.rows(f"SELECT count(*) FROM {quoted(table.name)}")
        if count:
            filled[table.name] = int(count)
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
            written += _copy_in(conn, table, open_rows(table))
            for column in target.identity:
                _move_sequence(conn, table.name, column, table.identity.get(column, 0))
        return written


def _copy_in(conn: OwnConnection, table: TableRows, source: IO[bytes]) -> int:
    columns = _column_list(table.columns)
    conn.copy_in(f"COPY {quoted(table.name)} ({columns}) FROM STDIN", source)
    [(count,)] = conn.rows(f"SELECT count(*) FROM {quoted(table.name)}")
    if count != table.rows:
        raise DatabaseCopyError(
            f"table {table.name}: {count} rows restored, the backup lists {table.rows}"
        )
    logger.info("restored %d rows of %s", count, table.name)
    return int(count)


def _move_sequence(conn: OwnConnection, table: str, column: str, handed: int) -> None:
    """Move ``table.column``'s sequence past its restored values and the source's ``handed``."""
    [(most,)] = conn.rows(f"SELECT max({quoted(column)}) FROM {quoted(table)}")
    highest = max(0 if most is None else int(most), handed)
    if highest > 0:
        conn.run(
            "SELECT setval(pg_get_serial_sequence(%s, %s), %s)", (quoted(table), column, highest)
        )


def _in_dependency_order(conn: OwnConnection, tables: list[TableRows]) -> list[TableRows]:
    """``tables`` with every table after those its foreign keys reference, else by name."""
    edges = conn.rows(
        "SELECT c.conrelid::regclass::text, c.confrelid::regclass::text FROM pg_constraint c"
        " WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace"
    )
    needs: dict[str, set[str]] = {}
    for child, parent in edges:
        if child != parent:
            needs.setdefault(_unquoted(str(child)), set()).add(_unquoted(str(parent)))
    pending = sorted(tables, key=lambda t: t.name)
    ordered: list[TableRows] = []
    while pending:
        waiting = {t.name for t in pending}
        ready = [t for t in pending if not needs.get(t.name, set()) & waiting]
        if not ready:  # a cycle: the rest by name (the load then fails and says why)
            ready = pending[:1]
        ordered += ready
        pending = [t for t in pending if t not in ready]
    return ordered


def _unquoted(name: str) -> str:
    """A ``regclass`` text as the table's name (it is quoted when it needs to be)."""
    if len(name) > 1 and name.startswith('"') and name.endswith('"'):
        return name[1:-1].replace('""', '"')
    return name

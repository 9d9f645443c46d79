"""Copy a SQLite ``state.db`` into PostgreSQL, table by table, in one transaction.

``chorus migrate-db --to postgresql://…`` first opens every component on the
URL, which creates their tables there; this module then copies the rows of
each table both sides have, the columns both sides have (generated ones, such
as the search vector, are left to PostgreSQL to compute). Rows go in their
SQLite order, so what is ordered by insertion stays in order; identity
columns are moved past the copied ids afterwards, so new rows never collide
with copied ones.

It refuses a destination that already holds sessions: a copy is made once,
into an empty database, while nothing writes to the source.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory.database._errors import sqlite_errors
from memory.database._postgres import acquire_pool, release_pool
from memory.database._types import Connection
from memory.errors import DatabaseCopyError, DatabaseError

__all__ = ["TableCopy", "copy_sqlite_to_postgres"]

logger = logging.getLogger(__name__)

BATCH_ROWS = 1000
"""Rows sent to PostgreSQL per statement batch."""

SKIPPED_TABLES = frozenset({"sqlite_sequence", "chorus_schema"})
"""Bookkeeping of the engines themselves, never copied."""


@dataclass(frozen=True, slots=True)
class TableCopy:
    table: str
    rows: int


def _sqlite_tables(conn: sqlite3.Connection) -> dict[str, list[str]]:
    names = [
        str(row[0])
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            " AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name"
        )
    ]
    tables: dict[str, list[str]] = {}
    for name in names:
        if "_fts" in name:  # FTS5's shadow tables: the index is rebuilt by PostgreSQL
            continue
        # table_xinfo: hidden column 2/3 are generated (virtual/stored), not copied
        columns = [
            str(row[1]) for row in conn.execute(f'PRAGMA table_xinfo("{name}")') if row[6] == 0
        ]
        tables[name] = columns
    return tables


def _postgres_tables(conn: Connection) -> dict[str, tuple[list[str], list[str]]]:
    """Every table of the current schema: its insertable columns and its identity columns."""
    rows = conn.execute(
        "SELECT table_name, column_name, is_generated, is_identity, identity_generation"
        " FROM information_schema.columns WHERE table_schema = current_schema()"
        " ORDER BY table_name, ordinal_position"
    ).fetchall()
    tables: dict[str, tuple[list[str], list[str]]] = {}
    for table, column, generated, identity, generation in rows:
        insertable, identities = tables.setdefault(str(table), ([], []))
        if generated == "ALWAYS" or generation == "ALWAYS":
            continue
        insertable.append(str(column))
        if identity == "YES":
            identities.append(str(column))
    return tables


def copy_sqlite_to_postgres(source: Path, url: str) -> list[TableCopy]:
    """Copy every shared table of ``source`` into ``url``; the copied row counts by table."""
    if not source.exists():
        raise DatabaseCopyError(f"{source} does not exist: there is nothing to copy")
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    pool = acquire_pool(url, size=2)
    try:
        with pool.transaction() as dst, sqlite_errors():
            return _copy(src, dst)
    except DatabaseError as exc:
        raise DatabaseCopyError(f"the copy failed and was undone: {exc}") from exc
    finally:
        src.close()
        release_pool(pool)


def _copy(src: sqlite3.Connection, dst: Connection) -> list[TableCopy]:
    theirs = _postgres_tables(dst)
    if "sessions" in theirs:
        held = dst.execute("SELECT count(*) FROM sessions").fetchone()[0]
        if held:
            raise DatabaseCopyError(
                f"the destination already holds {held} sessions; copy into an empty database"
            )
    done: list[TableCopy] = []
    ours = _sqlite_tables(src)
    for table in _in_dependency_order(ours):
        if table in SKIPPED_TABLES or table not in theirs:
            if table not in SKIPPED_TABLES:
                logger.info("table %s has no counterpart in PostgreSQL; not copied", table)
            continue
        insertable, identities = theirs[table]
        columns = [c for c in ours[table] if c in insertable]
        done.append(TableCopy(table, _copy_rows(src, dst, table, columns)))
        for column in identities:
            dst.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'),"
                f' GREATEST((SELECT max("{column}") FROM "{table}"), 1))'
            )
    return done


def _in_dependency_order(tables: dict[str, list[str]]) -> list[str]:
    """Sessions before the messages that reference them; the rest by name."""
    return sorted(tables, key=lambda name: (name != "sessions", name))


def _copy_rows(src: sqlite3.Connection, dst: Connection, table: str, columns: list[str]) -> int:
    if not columns:
        return 0
    names = ", ".join(f'"{c}"' for c in columns)
    marks = ", ".join("?" for _ in columns)
    insert = f'INSERT INTO "{table}" ({names}) VALUES ({marks})'
    cursor = src.execute(f'SELECT {names} FROM "{table}" ORDER BY rowid')
    copied = 0
    while True:
        rows: Sequence[Sequence[Any]] = cursor.fetchmany(BATCH_ROWS)
        if not rows:
            break
        dst.executemany(insert, [tuple(row) for row in rows])
        copied += len(rows)
    logger.info("copied %d rows of %s", copied, table)
    return copied

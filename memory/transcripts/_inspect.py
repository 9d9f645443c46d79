"""Looking at the session database without changing it: its schema version, its size.

Diagnostics (``chorus doctor``, ``chorus sessions``, ``chorus migrate --check``,
backups) open the database this way: SQLite read-only (``mode=ro``), PostgreSQL
with plain SELECTs. Nothing is created and nothing is migrated, so running a
newer chorus to look at a database leaves it usable by the chorus that runs it.
Only ``chorus gateway``, ``chorus worker`` and ``chorus migrate`` migrate.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from memory.database import Location, close_pool, is_postgres, open_pool, safe_location
from memory.errors import DatabaseError, SessionDBError
from memory.transcripts._pg_schema import COMPONENT, PG_SCHEMA_VERSION
from memory.transcripts._schema import SCHEMA_VERSION

__all__ = ["SchemaState", "inspect_schema", "sqlite_schema_version"]


@dataclass(frozen=True, slots=True)
class SchemaState:
    """The session database's schema version (``found``) against this chorus's (``target``).

    ``found`` is None when there is no database yet; ``sessions`` is None when
    the schema is not the current one (its tables are not read then).
    """

    where: str
    found: int | None
    target: int
    sessions: int | None = None
    size: int = 0
    """Bytes of the SQLite file (0 on PostgreSQL)."""

    @property
    def current(self) -> bool:
        return self.found == self.target

    @property
    def outdated(self) -> bool:
        return self.found is not None and self.found < self.target

    @property
    def too_new(self) -> bool:
        return self.found is not None and self.found > self.target

    def describe(self) -> str:
        """One line for an operator: the version, and what will happen to it."""
        if self.found is None:
            return f"no database yet; created with schema {self.target} at the first start"
        if self.outdated:
            return f"schema {self.found}, will be migrated to {self.target}"
        if self.too_new:
            return (
                f"schema {self.found}, newer than this chorus ({self.target}); "
                "upgrade chorus to use it"
            )
        return f"schema {self.found}"


def sqlite_schema_version(path: Path) -> int | None:
    """``PRAGMA user_version`` of the SQLite file at ``path`` read-only; None if it is absent."""
    if not path.exists():
        return None
    conn = _read_only(path)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


def inspect_schema(where: Location) -> SchemaState:
    """The schema state of the session database at ``where``; never creates or migrates it."""
    try:
        if is_postgres(where):
            return _inspect_postgres(str(where))
        return _inspect_sqlite(Path(where))
    except (sqlite3.Error, DatabaseError) as exc:
        where_safe = safe_location(where)
        raise SessionDBError(f"cannot read the session database in {where_safe}: {exc}") from exc


def _read_only(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)


def _inspect_sqlite(path: Path) -> SchemaState:
    if not path.exists():
        return SchemaState(str(path), None, SCHEMA_VERSION)
    conn = _read_only(path)
    try:
        found = int(conn.execute("PRAGMA user_version").fetchone()[0])
        sessions = None
        if found == SCHEMA_VERSION:
            sessions = int(conn.execute("SELECT count(*) FROM sessions").fetchone()[0])
    finally:
        conn.close()
    if found == 0:  # a file with no transcript tables yet (another component made it)
        return SchemaState(str(path), None, SCHEMA_VERSION, size=path.stat().st_size)
    return SchemaState(str(path), found, SCHEMA_VERSION, sessions, path.stat().st_size)


def _inspect_postgres(url: str) -> SchemaState:
    pool = open_pool(url, size=1)
    try:
        with pool.transaction() as conn:
            exists = conn.execute("SELECT to_regclass('chorus_schema') IS NOT NULL").fetchone()
            row = None
            if exists is not None and exists[0]:
                row = conn.execute(
                    "SELECT version FROM chorus_schema WHERE component = ?", (COMPONENT,)
                ).fetchone()
            found = None if row is None else int(row[0])
            sessions = None
            if found == PG_SCHEMA_VERSION:
                count = conn.execute("SELECT count(*) FROM sessions").fetchone()
                sessions = 0 if count is None else int(count[0])
            else:  # the gateway will create or migrate the tables: may it?
                row = conn.execute(
                    "SELECT current_schema(), has_schema_privilege(current_schema(), 'CREATE')"
                ).fetchone()
                if row is None or not row[1]:
                    schema = "" if row is None else f" {row[0]}"
                    raise SessionDBError(
                        f"PostgreSQL {safe_location(url)}: this role may not create tables in "
                        f"schema{schema}, which the gateway needs to create or migrate them"
                    )
    finally:
        close_pool(pool)
    return SchemaState(safe_location(url), found, PG_SCHEMA_VERSION, sessions)

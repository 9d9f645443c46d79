"""Both engines' errors leave ``memory.database`` as one ``DatabaseError`` family."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest

from memory.database import Location, close_pool, open_pool, sqlite_errors
from memory.errors import (
    DatabaseError,
    DatabaseFull,
    DatabaseIntegrityError,
    DatabaseLocked,
    DatabaseUnavailable,
    MemoryLayerError,
    SessionDBError,
)
from memory.tables import Tables, storage_fault

pytest_plugins = ["tests.fakes.tables_backends"]


class Notes(Tables):
    SCHEMA = ("CREATE TABLE IF NOT EXISTS notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)",)
    WHAT = "notes"

    def add(self, note_id: int, body: str) -> None:
        with self._locked(write=True) as conn:
            conn.execute("INSERT INTO notes (id, body) VALUES (?, ?)", (note_id, body))


def test_a_broken_constraint_is_an_integrity_error_on_either_engine(where: Location) -> None:
    with Notes(where) as notes:
        notes.add(1, "first")
        with pytest.raises(SessionDBError) as raised:
            notes.add(1, "again")
    database_error = raised.value.__cause__
    assert isinstance(database_error, DatabaseIntegrityError)
    engine_error = database_error.__cause__
    assert isinstance(engine_error, (sqlite3.IntegrityError, psycopg.errors.IntegrityError))
    assert not isinstance(database_error, sqlite3.Error)


def test_inside_a_postgres_transaction_the_error_is_already_a_database_error(
    postgres_url: str,
) -> None:
    with Notes(postgres_url):
        pool = open_pool(postgres_url)
        try:
            with pool.transaction() as conn:
                conn.execute("INSERT INTO notes (id, body) VALUES (1, 'x')")
            with pytest.raises(DatabaseIntegrityError) as raised, pool.transaction() as conn:
                conn.execute("INSERT INTO notes (id, body) VALUES (1, 'y')")
        finally:
            close_pool(pool)
    assert isinstance(raised.value.__cause__, psycopg.errors.UniqueViolation)


def test_a_row_another_transaction_holds_is_database_locked_on_postgres(
    postgres_url: str,
) -> None:
    with Notes(postgres_url) as notes:
        notes.add(1, "held")
    pool = open_pool(postgres_url, size=2)
    try:
        with pool.transaction() as holder:
            holder.execute("UPDATE notes SET body = 'mine' WHERE id = 1")
            with pytest.raises(DatabaseLocked) as raised, pool.transaction() as other:
                other.execute("SET LOCAL lock_timeout = '100ms'")
                other.execute("UPDATE notes SET body = 'theirs' WHERE id = 1")
    finally:
        close_pool(pool)
    assert isinstance(raised.value.__cause__, psycopg.errors.LockNotAvailable)


def test_a_file_another_writer_holds_is_database_locked_on_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    holder = sqlite3.connect(path, isolation_level=None)
    other = sqlite3.connect(path, isolation_level=None, timeout=0)
    try:
        holder.execute("BEGIN IMMEDIATE")
        with pytest.raises(DatabaseLocked) as raised, sqlite_errors():
            other.execute("BEGIN IMMEDIATE")
    finally:
        holder.close()
        other.close()
    assert isinstance(raised.value.__cause__, sqlite3.OperationalError)


def test_an_unreachable_postgres_is_database_unavailable(tmp_path: Path) -> None:
    url = f"postgresql://nobody:secret@127.0.0.1:1/none?host={tmp_path}"
    with pytest.raises(DatabaseUnavailable) as raised:
        open_pool(url)
    assert "secret" not in str(raised.value)
    assert isinstance(raised.value.__cause__, psycopg.OperationalError)
    with pytest.raises(SessionDBError) as opening:
        Notes(url)
    assert isinstance(opening.value.__cause__, DatabaseUnavailable)


def test_a_full_disk_is_database_full_one_error_line_and_a_storage_fault_until_a_write(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "state.db"
    with Notes(path) as notes:
        notes.add(1, "first")
        conn = notes._conn
        assert conn is not None
        (pages,) = conn.execute("PRAGMA page_count").fetchone()
        conn.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own SQLITE_FULL
        for n in range(2, 5):
            with pytest.raises(SessionDBError) as raised:
                notes.add(n, "x" * 20_000)
            assert isinstance(raised.value.__cause__, DatabaseFull)  # not a failed ROLLBACK
        assert storage_fault(path) == "database or disk is full"
        [line] = [r for r in caplog.records if r.levelname == "ERROR"]  # not one a write
        assert "disk full" in line.getMessage() and str(path) in line.getMessage()

        conn.execute("PRAGMA max_page_count = 4294967294")  # space is back
        notes.add(5, "x" * 20_000)
        assert storage_fault(path) is None


def test_database_errors_are_memory_layer_errors() -> None:
    for kind in (DatabaseError, DatabaseIntegrityError, DatabaseLocked, DatabaseUnavailable):
        assert issubclass(kind, MemoryLayerError)
        assert not issubclass(kind, sqlite3.Error)

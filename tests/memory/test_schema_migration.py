"""Upgrading state.db: a database made by today's schema, migrated by a synthetic next
version — in one transaction, after a copy of it as it was; today's code then refuses
the newer file with a clear message."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memory.errors import SessionDBError
from memory.transcripts import SCHEMA_VERSION, SessionDB
from memory.transcripts._schema import MIGRATIONS, apply_schema

NEXT = (
    *MIGRATIONS,
    (
        "ALTER TABLE sessions ADD COLUMN label TEXT",
        "CREATE INDEX idx_sessions_label ON sessions(label)",
    ),
)
BROKEN_NEXT = (*MIGRATIONS, ("ALTER TABLE sessions ADD COLUMN half TEXT", "NOT SQL AT ALL"))


@pytest.fixture
def today(tmp_path: Path) -> Path:
    """A state.db written by the current schema, with one conversation in it."""
    path = tmp_path / "state.db"
    with SessionDB(path) as db:
        db.create_session("s1", platform="telegram", user_key="telegram:1")
        db.append_message("s1", "user", "the beehive is on the roof")
        db.append_message("s1", "assistant", "Noted.")
    return path


def raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def columns(conn: sqlite3.Connection) -> set[str]:
    return {row[1] for row in conn.execute("PRAGMA table_info(sessions)")}


def test_a_newer_chorus_migrates_after_copying_the_old_database(today: Path) -> None:
    conn = raw(today)
    try:
        assert apply_schema(conn, NEXT) == SCHEMA_VERSION + 1
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
        assert "label" in columns(conn)
        assert conn.execute("SELECT content FROM messages ORDER BY id").fetchall() == [
            ("the beehive is on the roof",),
            ("Noted.",),
        ]
        assert apply_schema(conn, NEXT) == SCHEMA_VERSION + 1  # once only: nothing to do
    finally:
        conn.close()
    copy = today.with_name(f"state.db.v{SCHEMA_VERSION}.bak")
    assert copy.stat().st_mode & 0o077 == 0
    old = raw(copy)
    try:
        assert old.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert "label" not in columns(old)
        assert old.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 2
    finally:
        old.close()


def test_an_older_chorus_refuses_the_migrated_database(today: Path) -> None:
    conn = raw(today)
    apply_schema(conn, NEXT)
    conn.close()
    with pytest.raises(SessionDBError, match=r"newer than the supported version.*upgrade chorus"):
        SessionDB(today)


def test_a_failing_step_rolls_the_whole_migration_back(today: Path) -> None:
    conn = raw(today)
    try:
        with pytest.raises(sqlite3.Error):
            apply_schema(conn, BROKEN_NEXT)
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert "half" not in columns(conn)
    finally:
        conn.close()
    with SessionDB(today) as db:  # today's chorus opens it as before
        assert [m.content for m in db.get_messages("s1")] == [
            "the beehive is on the roof",
            "Noted.",
        ]


def test_a_new_database_needs_no_copy(tmp_path: Path) -> None:
    with SessionDB(tmp_path / "state.db"):
        pass
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".bak")) == []


def test_the_gateway_refuses_a_newer_database_in_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    conn = raw(home / "state.db")
    apply_schema(conn, NEXT)
    conn.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
    env.update(
        {
            "CHORUS_HOME": str(home),
            "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
            "TELEGRAM_BOT_TOKEN": "123456:not-a-real-token",
            "CHORUS_TELEGRAM__BASE_URL": "http://127.0.0.1:9/bot",
            "CHORUS_GATEWAY__HTTP__PORT": "0",
        }
    )
    chorus = Path(sys.executable).with_name("chorus")
    done = subprocess.run(
        [str(chorus), "gateway"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert "newer than the supported version" in done.stderr and "upgrade chorus" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_version_1_database_gains_speakers_and_direct_sessions(tmp_path: Path) -> None:
    """The real step 1 → 2: rows written before it read back as not known (None)."""
    path = tmp_path / "state.db"
    conn = raw(path)
    apply_schema(conn, MIGRATIONS[:1])
    conn.execute(
        "INSERT INTO sessions (id, source, platform, user_key, started_at)"
        " VALUES ('old', 'telegram', 'telegram', 'telegram:1', 1.0)"
    )
    conn.execute(
        "INSERT INTO messages (session_id, role, content, timestamp)"
        " VALUES ('old', 'user', 'from before', 1.0)"
    )
    conn.close()
    with SessionDB(path) as db:
        old = db.get_session("old")
        assert old is not None and old.is_direct is None
        assert [m.speaker for m in db.get_messages("old")] == [None]
        db.create_session("new", platform="slack", user_key="slack#chat:C1", is_direct=False)
        db.append_message("new", "user", "hi", speaker="slack:U1")
        new = db.get_session("new")
        assert new is not None and new.is_direct is False
        assert [m.speaker for m in db.get_messages("new")] == ["slack:U1"]
    assert (tmp_path / "state.db.v1.bak").exists()

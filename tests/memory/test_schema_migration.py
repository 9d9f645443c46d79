"""Upgrading state.db: a database made by today's schema, migrated by a synthetic next
version — in one transaction, after a copy of it as it was; today's code then refuses
the newer file with a clear message."""

from __future__ import annotations

import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memory.errors import SessionDBError
from memory.transcripts import SCHEMA_VERSION, SearchHit, SessionDB
from memory.transcripts._schema import MIGRATIONS, apply_schema, build_fts_query, query_tokens
from tests.memory.test_session_db_search import assert_index_matches_messages

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


# -- the real step 2 -> 3: the FTS index keyed by user --------------------------------

V2_SEARCH_SQL = """
SELECT m.id AS message_id, m.session_id, m.role, m.timestamp,
       s.started_at AS session_started_at,
       snippet(messages_fts, 0, '>>>', '<<<', '…', 16) AS snippet,
       bm25(messages_fts) AS rank
FROM messages_fts
JOIN messages AS m ON m.id = messages_fts.rowid
JOIN sessions AS s ON s.id = m.session_id
WHERE messages_fts MATCH ?
  AND s.user_key = ?
  AND s.id IS NOT ?
  AND m.role IN ('user', 'assistant')
ORDER BY rank, m.timestamp DESC, m.id DESC
LIMIT ?
"""
"""The search of schema 2, as chorus ran it before version 3."""

V2_USERS = ["telegram:1", "discord:2", "slack:3", "telegram:4"]
ROLES = ("user", "assistant", "assistant", "tool")
V2_QUERIES = [
    "lighthouse",
    "keeper",
    "lighthouse keeper",
    "storm bees",  # no message holds both: the any-token fallback
    "café",
    "σίσυφος",
    "nothing-like-this",
    'NEAR("lighthouse" keeper) -x *',
]


def v2_search(
    conn: sqlite3.Connection, user: str, query: str, exclude: str | None
) -> list[tuple[object, ...]]:
    tokens = query_tokens(query)
    if not tokens:
        return []
    rows = conn.execute(V2_SEARCH_SQL, (build_fts_query(tokens), user, exclude, 100)).fetchall()
    if not rows and len(tokens) > 1:
        rows = conn.execute(
            V2_SEARCH_SQL, (build_fts_query(tokens, "OR"), user, exclude, 100)
        ).fetchall()
    return rows


def v2_database(path: Path, users: list[str], roles: tuple[str, ...] = ROLES) -> None:
    """A state.db of schema 2 as chorus 2 wrote it: sessions, messages, FTS by trigger."""
    rng = random.Random(3)
    words = ["lighthouse", "keeper", "storm", "bees", "café", "σίσυφος", "the", "a", "of"]
    conn = raw(path)
    try:
        apply_schema(conn, MIGRATIONS[:2])
        conn.execute("PRAGMA foreign_keys = ON")
        for n, user in enumerate(users * 2):
            conn.execute(
                "INSERT INTO sessions (id, source, platform, user_key, started_at, is_direct)"
                " VALUES (?, 'telegram', 'telegram', ?, ?, 1)",
                (f"s{n}", user, 1_000.0 + n),
            )
        for n in range(300):
            session = f"s{rng.randrange(len(users) * 2)}"
            role = rng.choice(roles)
            picked = rng.sample(words, rng.randint(1, 4)) + rng.choices(words, k=rng.randint(0, 12))
            rng.shuffle(picked)
            content = None if n % 50 == 7 else " ".join(picked)
            if content is not None and "storm" in picked:  # storm and bees never meet
                content = content.replace("bees", "hives")
            conn.execute(
                "INSERT INTO messages (session_id, role, content, timestamp, speaker)"
                " VALUES (?, ?, ?, ?, ?)",
                (session, role, content, 2_000.0 + n, None),
            )
    finally:
        conn.close()


def hit_fields(hit: SearchHit) -> tuple[object, ...]:
    return (
        hit.message_id,
        hit.session_id,
        hit.role,
        hit.timestamp,
        hit.session_started_at,
        hit.snippet,
    )


def test_a_version_2_database_migrates_and_finds_the_same_hits(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    v2_database(path, V2_USERS)
    conn = raw(path)
    try:
        cases = [
            (user, query, exclude)
            for user in V2_USERS
            for query in V2_QUERIES
            for exclude in (None, "s1", "s5")
        ]
        before = {case: v2_search(conn, *case) for case in cases}
        messages = conn.execute("SELECT * FROM messages ORDER BY id").fetchall()
    finally:
        conn.close()
    assert sum(1 for rows in before.values() if rows) > len(cases) // 2

    with SessionDB(path) as db:
        conn = db._connection()
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 5
        assert [row[:12] for row in conn.execute("SELECT * FROM messages ORDER BY id")] == [
            tuple(row) for row in messages
        ]
        numbers = conn.execute("SELECT user_key FROM user_numbers ORDER BY n").fetchall()
        assert [row[0] for row in numbers] == V2_USERS  # in the order they first came
        assert_index_matches_messages(conn)
        for (user, query, exclude), rows in before.items():
            hits = db.search(user, query, limit=100, exclude_session_id=exclude)
            # the same hits; the order within them now comes from the user's own statistics
            assert {hit_fields(hit) for hit in hits} == {tuple(row[:6]) for row in rows}, (
                user,
                query,
                exclude,
            )
        # carried forward: new messages and deletes keep the migrated index right
        db.create_session("new", platform="telegram", user_key=V2_USERS[0])
        added = db.append_message("new", "user", "a lighthouse after the upgrade")
        assert added in {hit.message_id for hit in db.search(V2_USERS[0], "lighthouse", 100)}
        conn.execute("DELETE FROM sessions WHERE id = 's0'")
        assert_index_matches_messages(conn)
    assert (tmp_path / "state.db.v2.bak").exists()


def test_a_version_2_database_of_one_user_keeps_its_order_and_ranks(tmp_path: Path) -> None:
    """With one user (and no tool output, which version 3 leaves out of the index) the
    user's statistics are the table's: the same order and ranks as before."""
    path = tmp_path / "state.db"
    v2_database(path, V2_USERS[:1], roles=("user", "assistant"))
    conn = raw(path)
    try:
        before = {query: v2_search(conn, V2_USERS[0], query, None) for query in V2_QUERIES}
    finally:
        conn.close()
    with SessionDB(path) as db:
        for query, rows in before.items():
            hits = db.search(V2_USERS[0], query, limit=100)
            assert [hit_fields(hit) for hit in hits] == [tuple(row[:6]) for row in rows], query
            assert [hit.rank for hit in hits] == pytest.approx([row[6] for row in rows], rel=1e-12)

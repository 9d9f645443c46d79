"""Messages found again by the platform's id: removed or edited when their author deletes
or edits them on the platform, with the search index following (SQLite and PostgreSQL)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory.database._postgres import _pools, acquire_pool, release_pool
from memory.transcripts import PG_SCHEMA_VERSION, SCHEMA_VERSION, PlatformPart, SessionDB
from memory.transcripts._pg_schema import PG_MIGRATIONS, apply_pg_schema
from memory.transcripts._schema import MIGRATIONS, apply_schema

pytest_plugins = ["tests.fakes.postgres_fixtures"]

ALICE = "slack:T1:U1"


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionDB]:
    where = (
        tmp_path / "sessions.db"
        if request.param == "sqlite"
        else request.getfixturevalue("postgres_url")
    )
    database = SessionDB(where)
    yield database
    database.close()


def conversation(db: SessionDB) -> None:
    db.create_session("s1", platform="slack", user_key=ALICE, started_at=1_000.0)
    db.append_message("s1", "user", "my zeppelin code is 4711", platform_message_id="171.01")
    db.append_message("s1", "assistant", "noted")
    db.append_message("s1", "user", "and the weather?", platform_message_id="171.02")


def test_a_deleted_message_leaves_the_transcript_and_the_index(db: SessionDB) -> None:
    conversation(db)
    assert db.search(ALICE, "zeppelin")
    removed = db.remove_platform_message("s1", "171.01")
    assert removed is not None and removed.before.content == "my zeppelin code is 4711"
    assert removed.text is None and not removed.part
    contents = [m.content for m in db.get_messages("s1")]
    assert contents == [None, "noted", "and the weather?"]  # later turns keep their place
    assert db.search(ALICE, "zeppelin") == []
    assert db.remove_platform_message("s1", "171.01") is None
    assert db.remove_platform_message("other", "171.02") is None


def test_a_message_is_found_by_chat_and_platform_id(db: SessionDB) -> None:
    conversation(db)
    db.create_session("s2", platform="slack", user_key=ALICE, chat_id="C2", started_at=2.0)
    db.append_message("s2", "user", "elsewhere", platform_message_id="171.02")
    found = db.platform_message("slack", "C2", "171.02")
    assert found is not None and found[0].session_id == "s2" and found[1] == 1
    assert db.platform_message("slack", "C9", "171.02") is None
    assert db.platform_message("discord", "C2", "171.02") is None


def test_an_edited_message_is_stored_and_found_with_its_new_words(db: SessionDB) -> None:
    conversation(db)
    before = db.edit_platform_message("s1", "171.02", "and the forecast for Lisbon?")
    assert before is not None and before.before.content == "and the weather?"
    [_, _, edited] = db.get_messages("s1")
    assert edited.content == "and the forecast for Lisbon?"
    assert edited.platform_message_id == "171.02"
    assert db.search(ALICE, "lisbon")
    assert db.search(ALICE, "weather") == []
    assert db.edit_platform_message("s1", "999.9", "nothing") is None


MERGED = "my zeppelin code is 4711\n\nand the weather?\n\nthanks"
PARTS = (PlatformPart("172.01", 24), PlatformPart("172.02", 16), PlatformPart("172.03", 6))


def merged(db: SessionDB, content: str = MERGED) -> None:
    db.create_session("s1", platform="slack", user_key=ALICE, chat_id="D1", started_at=1.0)
    db.append_message("s1", "user", "hello", platform_message_id="171.01")
    db.append_message("s1", "assistant", "hi")
    db.append_message("s1", "user", content, platform_message_id=PARTS)
    db.append_message("s1", "assistant", "noted")


def user_texts(db: SessionDB) -> list[str | None]:
    return [m.content for m in db.get_messages("s1") if m.role == "user"]


def test_every_message_of_a_merged_turn_is_found_by_its_platform_id(db: SessionDB) -> None:
    merged(db)
    for part in PARTS:
        found = db.platform_message("slack", "D1", part.id)
        assert found is not None and found[0].content == MERGED and found[1] == 2
    assert db.platform_message("slack", "D1", "172.09") is None


def test_a_deleted_part_leaves_the_merged_text_and_the_last_one_takes_the_turn(
    db: SessionDB,
) -> None:
    merged(db)
    removed = db.remove_platform_message("s1", "172.01")
    assert removed is not None and removed.part
    assert removed.text == "and the weather?\n\nthanks"
    assert user_texts(db) == ["hello", "and the weather?\n\nthanks"]
    assert db.search(ALICE, "zeppelin") == [] and db.search(ALICE, "weather")
    assert db.remove_platform_message("s1", "172.01") is None  # once only
    assert db.remove_platform_message("s1", "172.03") is not None
    assert user_texts(db) == ["hello", "and the weather?"]
    last = db.remove_platform_message("s1", "172.02")
    assert last is not None and last.text is None and not last.part
    assert user_texts(db) == ["hello", None]  # the turn keeps its place, without text
    assert db.platform_message("slack", "D1", "172.02") is None


def test_an_edited_part_changes_only_its_words_and_is_found_after_it(db: SessionDB) -> None:
    merged(db, MERGED + "\n[1 image(s)]")
    edited = db.edit_platform_message("s1", "172.02", "and the forecast for Lisbon?")
    assert edited is not None and edited.part
    now = "my zeppelin code is 4711\n\nand the forecast for Lisbon?\n\nthanks"
    assert edited.text == now + "\n[1 image(s)]" and edited.said == now
    assert [p.length for p in edited.parts] == [24, 28, 6]
    assert db.search(ALICE, "lisbon") and db.search(ALICE, "weather") == []
    removed = db.remove_platform_message("s1", "172.03")  # the new length holds
    assert removed is not None
    assert user_texts(db)[1] == "my zeppelin code is 4711\n\nand the forecast for Lisbon?" + (
        "\n[1 image(s)]"
    )


def test_a_merged_text_that_lost_its_layout_is_taken_whole(db: SessionDB) -> None:
    merged(db, "something else entirely")
    removed = db.remove_platform_message("s1", "172.02")
    assert removed is not None and removed.text is None
    assert user_texts(db) == ["hello", None]


def test_a_sqlite_database_of_schema_4_gets_the_parts_table_and_keeps_its_ids(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        apply_schema(conn, MIGRATIONS[:4])
        conn.execute(
            "INSERT INTO sessions (id, source, platform, chat_id, user_key, started_at)"
            " VALUES ('s1', 'slack', 'slack', 'D1', ?, 1.0)",
            (ALICE,),
        )
        conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp, platform_message_id)"
            " VALUES ('s1', 'user', 'my zeppelin code is 4711', 1.0, '171.01')"
        )
    finally:
        conn.close()
    with SessionDB(path) as db:
        assert db.platform_message("slack", "D1", "171.01") is not None
        db.append_message("s1", "user", MERGED, platform_message_id=PARTS)
        assert db.platform_message("slack", "D1", "172.03") is not None
    with sqlite3.connect(path) as check:
        assert check.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 5


def test_postgresql_transcripts_of_schema_3_get_the_parts_table(postgres_url: str) -> None:
    pool = acquire_pool(postgres_url, size=1)
    try:
        with pool.schema_transaction() as conn:
            apply_pg_schema(conn, PG_MIGRATIONS[:3])
            conn.execute(
                "INSERT INTO sessions (id, source, platform, chat_id, user_key, started_at)"
                " VALUES ('s1', 'slack', 'slack', 'D1', ?, 1.0)",
                (ALICE,),
            )
            conn.execute(
                "INSERT INTO messages (session_id, role, content, timestamp, platform_message_id)"
                " VALUES ('s1', 'user', 'my zeppelin code is 4711', 1.0, '171.01')"
            )
    finally:
        release_pool(pool)
    _pools.clear()  # a process starting afresh against the old database
    with SessionDB(postgres_url) as db:
        db.append_message("s1", "user", MERGED, platform_message_id=PARTS)
        assert db.remove_platform_message("s1", "171.01") is not None
        assert db.remove_platform_message("s1", "172.02") is not None
        assert [m.content for m in db.get_messages("s1")] == [
            None,
            "my zeppelin code is 4711\n\nthanks",
        ]
        with db._write() as conn:
            row = conn.execute(
                "SELECT version FROM chorus_schema WHERE component = 'transcripts'"
            ).fetchone()
        assert row[0] == PG_SCHEMA_VERSION == 4

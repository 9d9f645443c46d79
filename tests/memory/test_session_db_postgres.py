"""SessionDB on a real PostgreSQL server: what is PostgreSQL's own (schema, index, sharing).

The behaviour both backends share is tested on both in test_session_db.py and
test_session_db_search.py; here: the versioned schema, the tsvector index kept
right by plain SQL too, and two processes' worth of SessionDB on one database
(two replicas) agreeing, with a session ended exactly once.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from memory.errors import SessionDBError, SessionFenced
from memory.transcripts import SessionDB
from memory.transcripts._pg_schema import PG_SCHEMA_VERSION

pytest_plugins = ["tests.fakes.postgres_fixtures"]

ALICE = "telegram:100"
BOB = "telegram:200"


@pytest.fixture
def db(postgres_url: str) -> Iterator[SessionDB]:
    database = SessionDB(postgres_url)
    yield database
    database.close()


def start(db: SessionDB, session_id: str, user_key: str = ALICE) -> None:
    db.create_session(session_id, platform="telegram", user_key=user_key, started_at=1_000.0)


def test_the_schema_version_is_recorded_and_a_newer_one_refused(postgres_url: str) -> None:
    with SessionDB(postgres_url) as db, db._write() as conn:
        row = conn.execute(
            "SELECT version FROM chorus_schema WHERE component = 'transcripts'"
        ).fetchone()
        assert row[0] == PG_SCHEMA_VERSION
        conn.execute("UPDATE chorus_schema SET version = 99 WHERE component = 'transcripts'")
    from memory.database._postgres import _pools

    _pools.clear()  # a process starting afresh against the upgraded database
    with pytest.raises(SessionDBError, match="newer than the supported"):
        SessionDB(postgres_url)


def test_plain_sql_writes_keep_the_index_right(db: SessionDB) -> None:
    start(db, "alice")
    start(db, "bob", BOB)
    with db._write() as conn:
        conn.execute(
            "INSERT INTO messages (session_id, role, content, timestamp)"
            " VALUES ('alice', 'user', 'written by hand: zeppelin', 1.0)"
        )
    [hit] = db.search(ALICE, "zeppelin")
    assert db.search(BOB, "zeppelin") == []
    with db._write() as conn:
        conn.execute(
            "UPDATE messages SET content = 'edited: blimp' WHERE id = ?", (hit.message_id,)
        )
    assert db.search(ALICE, "zeppelin") == []
    assert [h.message_id for h in db.search(ALICE, "blimp")] == [hit.message_id]
    with db._write() as conn:
        conn.execute("DELETE FROM sessions WHERE id = 'alice'")  # cascades
    assert db.search(ALICE, "blimp") == []


def test_tool_output_and_system_text_stay_out_of_the_index(db: SessionDB) -> None:
    start(db, "s1")
    db.append_message("s1", "system", "kraken in the system prompt")
    db.append_message("s1", "tool", "kraken in a tool result", tool_call_id="c1")
    said = db.append_message("s1", "user", "a kraken at last")
    with db._read() as conn:
        indexed = conn.execute("SELECT id FROM messages WHERE tsv IS NOT NULL").fetchall()
    assert [row[0] for row in indexed] == [said]
    assert [hit.message_id for hit in db.search(ALICE, "kraken")] == [said]


def test_two_replicas_share_one_database_and_end_a_session_once(postgres_url: str) -> None:
    from memory.database._postgres import _pools

    first = SessionDB(postgres_url)
    _pools.clear()  # the second opens its own pool, as another process would
    second = SessionDB(postgres_url)
    try:
        assert first._pg is not second._pg
        start(first, "s1")
        second.append_message("s1", "user", "the lighthouse keeper")
        first.append_message("s1", "assistant", "keeps the lighthouse")
        assert [m.role for m in second.get_messages("s1")] == ["user", "assistant"]
        assert len(first.search(ALICE, "lighthouse")) == 2
        results: list[bool] = []
        gate = threading.Barrier(20)

        def end(db: SessionDB) -> None:
            gate.wait()
            results.append(db.end_session("s1", "idle"))

        threads = [threading.Thread(target=end, args=((first, second)[n % 2],)) for n in range(20)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert results.count(True) == 1
        assert second.get_session("s1") is not None
        assert first.get_session("s1").end_reason == "idle"  # type: ignore[union-attr]
    finally:
        first.close()
        second.close()


def test_an_unreachable_server_is_a_clear_error_without_the_password() -> None:
    url = "postgresql://chorus:hunter2@127.0.0.1:1/nothing"
    with pytest.raises(SessionDBError) as caught:
        SessionDB(url)
    assert "hunter2" not in str(caught.value)
    assert "cannot open session database" in str(caught.value)


def test_a_batch_commits_together_and_a_failed_write_is_undone_alone(db: SessionDB) -> None:
    start(db, "s1")
    with db.batch():
        db.append_message("s1", "user", "one")
        with pytest.raises(SessionDBError):
            db.append_message("nope", "user", "to an unknown session")
        db.append_message("s1", "user", "two")
    assert [m.content for m in db.get_messages("s1")] == ["one", "two"]


def test_a_transcript_write_with_an_older_epoch_is_refused(postgres_url: str) -> None:
    """Two replicas' SessionDB on one database: the one that took the session over takes
    a new epoch; the former owner's writes (epoch 0, then 1 after a second takeover) are
    refused with nothing written, the newest one's go through."""
    with SessionDB(postgres_url) as first, SessionDB(postgres_url) as second:
        start(first, "s1")
        first.append_message("s1", "user", "hello", epoch=0)  # nobody took an epoch yet
        assert second.take_epoch("s1") == 1
        with pytest.raises(SessionFenced, match="epoch 0 was refused"):
            first.append_message("s1", "assistant", "stale answer", epoch=0)
        second.append_message("s1", "assistant", "answer", epoch=1)
        assert first.take_epoch("s1") == 2
        with pytest.raises(SessionFenced):
            second.append_message("s1", "assistant", "stale again", epoch=1)
        first.append_message("s1", "user", "thanks", epoch=2)
        said = [m.content for m in first.get_messages("s1")]
        assert said == ["hello", "answer", "thanks"]
        assert first.get_session("s1").message_count == 3  # type: ignore[union-attr]

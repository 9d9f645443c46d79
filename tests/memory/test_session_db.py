"""SessionDB against a real SQLite file."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory.errors import SessionDBError
from memory.transcripts import SCHEMA_VERSION, SessionDB, fts5_available

pytest_plugins = ["tests.fakes.postgres_fixtures"]

ALICE = "telegram:100"
BOB = "telegram:200"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "sessions.db"


@pytest.fixture
def sqlite_db(db_path: Path) -> Iterator[SessionDB]:
    """For what is SQLite's own (the file, its modes, its schema version)."""
    database = SessionDB(db_path)
    yield database
    database.close()


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, db_path: Path) -> Iterator[SessionDB]:
    """The same behaviour on both backends: a SQLite file, a PostgreSQL database."""
    where = db_path if request.param == "sqlite" else request.getfixturevalue("postgres_url")
    database = SessionDB(where)
    yield database
    database.close()


def start(
    db: SessionDB,
    session_id: str,
    user_key: str = ALICE,
    *,
    chat_id: str | None = "chat-1",
    thread_id: str | None = None,
    started_at: float = 1_000.0,
) -> None:
    db.create_session(
        session_id,
        platform="telegram",
        user_key=user_key,
        chat_id=chat_id,
        thread_id=thread_id,
        user_id=user_key.split(":", 1)[1],
        started_at=started_at,
    )


# -- opening ------------------------------------------------------------------


def test_fts5_is_available() -> None:
    assert fts5_available() is True


def test_new_database_is_wal_with_current_schema(sqlite_db: SessionDB, db_path: Path) -> None:
    other = sqlite3.connect(db_path)
    try:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert other.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        names = {row[0] for row in other.execute("SELECT name FROM sqlite_master")}
    finally:
        other.close()
    assert {"sessions", "messages", "messages_fts", "user_numbers"} <= names
    assert {"idx_sessions_user_key", "idx_sessions_chat", "idx_sessions_ended_at"} <= names
    assert {"messages_fts_ai", "messages_fts_ad", "messages_fts_au", "messages_user_n_ai"} <= names
    assert {"user_numbers_ai", "user_numbers_ad", "messages_keep_user"} <= names


def test_reopening_keeps_data(db_path: Path) -> None:
    with SessionDB(db_path) as first:
        start(first, "s1")
        first.append_message("s1", "user", "remember the lighthouse", timestamp=1_001.0)
    with SessionDB(db_path) as second:
        record = second.get_session("s1")
        assert record is not None
        assert record.message_count == 1
        assert [m.content for m in second.get_messages("s1")] == ["remember the lighthouse"]
        assert [hit.session_id for hit in second.search(ALICE, "lighthouse")] == ["s1"]


def test_two_connections_share_the_file(sqlite_db: SessionDB, db_path: Path) -> None:
    with SessionDB(db_path) as other:
        start(sqlite_db, "s1")
        sqlite_db.append_message("s1", "user", "hello from the first")
        assert other.get_messages("s1")[0].content == "hello from the first"


def test_directory_path_raises(tmp_path: Path) -> None:
    with pytest.raises(SessionDBError, match="cannot open"):
        SessionDB(tmp_path)


def test_garbage_file_raises(tmp_path: Path) -> None:
    path = tmp_path / "broken.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(SessionDBError, match="cannot open"):
        SessionDB(path)


def test_newer_schema_is_refused(db_path: Path) -> None:
    SessionDB(db_path).close()
    raw = sqlite3.connect(db_path)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    raw.close()
    with pytest.raises(SessionDBError, match="newer"):
        SessionDB(db_path)


def test_closed_database_raises(db_path: Path) -> None:
    database = SessionDB(db_path)
    database.close()
    database.close()
    with pytest.raises(SessionDBError, match="closed"):
        database.get_session("s1")


# -- sessions -----------------------------------------------------------------


def test_create_session_twice_is_a_no_op(db: SessionDB) -> None:
    db.create_session("s1", platform="telegram", user_key=ALICE, model="m1", started_at=10.0)
    db.create_session("s1", platform="discord", user_key=BOB, model="m2", started_at=20.0)
    record = db.get_session("s1")
    assert record is not None
    assert (record.platform, record.source, record.user_key, record.model) == (
        "telegram",
        "telegram",
        ALICE,
        "m1",
    )
    assert record.started_at == record.last_active_at == 10.0
    assert len(db.list_sessions()) == 1


def test_create_session_needs_ids(db: SessionDB) -> None:
    with pytest.raises(SessionDBError):
        db.create_session("s1", platform="telegram", user_key="")


def test_end_session_only_once(db: SessionDB) -> None:
    start(db, "s1")
    start(db, "s2", started_at=2_000.0)
    assert db.end_session("s1", "idle", ended_at=1_500.0) is True
    assert db.end_session("s1", "shutdown", ended_at=9_999.0) is False
    assert db.end_session("missing", "idle") is False
    record = db.get_session("s1")
    assert record is not None
    assert (record.ended_at, record.end_reason, record.is_open) == (1_500.0, "idle", False)
    assert [r.id for r in db.find_open_sessions()] == ["s2"]
    assert [r.id for r in db.list_sessions(active_only=True)] == ["s2"]


def test_list_sessions_newest_first_and_by_user(db: SessionDB) -> None:
    start(db, "a-old", started_at=1.0)
    start(db, "b", BOB, started_at=2.0)
    start(db, "a-new", started_at=3.0)
    assert [r.id for r in db.list_sessions()] == ["a-new", "b", "a-old"]
    assert [r.id for r in db.list_sessions(user_key=ALICE)] == ["a-new", "a-old"]
    assert [r.id for r in db.list_sessions(limit=1)] == ["a-new"]
    assert [r.id for r in db.for_user(BOB).list_sessions()] == ["b"]


def test_setters(db: SessionDB) -> None:
    start(db, "s1")
    db.set_title("s1", "Trip planning")
    db.set_system_prompt("s1", "You are helpful.")
    db.set_summary("s1", "Planned a trip to Lisbon.")
    db.set_title("missing", "nothing happens")
    record = db.get_session("s1")
    assert record is not None
    assert (record.title, record.system_prompt, record.summary) == (
        "Trip planning",
        "You are helpful.",
        "Planned a trip to Lisbon.",
    )


def test_latest_summary_is_newest_ended_in_that_chat_for_that_user(db: SessionDB) -> None:
    def ended(
        sid: str,
        user: str,
        at: float,
        summary: str | None,
        chat: str = "chat-1",
        thread: str | None = None,
    ) -> None:
        start(db, sid, user, chat_id=chat, thread_id=thread)
        db.set_summary(sid, summary)
        db.end_session(sid, "idle", ended_at=at)

    ended("new", ALICE, 200.0, "new summary")
    ended("old", ALICE, 100.0, "old summary")
    ended("unsummarised", ALICE, 250.0, None)
    ended("bob", BOB, 300.0, "bob's summary")
    ended("other-chat", ALICE, 400.0, "other chat", chat="chat-2")
    ended("thread", ALICE, 500.0, "in a thread", thread="t-1")
    start(db, "open")
    db.set_summary("open", "not ended yet")

    assert db.latest_summary(ALICE, "telegram", "chat-1", None) == "new summary"
    assert db.latest_summary(BOB, "telegram", "chat-1", None) == "bob's summary"
    assert db.latest_summary(ALICE, "telegram", "chat-2", None) == "other chat"
    assert db.latest_summary(ALICE, "telegram", "chat-1", "t-1") == "in a thread"
    assert db.latest_summary(ALICE, "discord", "chat-1", None) is None
    assert db.latest_summary("telegram:999", "telegram", "chat-1", None) is None


# -- messages -----------------------------------------------------------------


def test_append_and_get_round_trip(db: SessionDB) -> None:
    start(db, "s1")
    calls = [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "memory", "arguments": '{"action": "add"}'},
        },
        {
            "id": "call_2",
            "type": "function",
            "function": {"name": "session_search", "arguments": '{"query": "café"}'},
        },
    ]
    first = db.append_message("s1", "user", "Please remember café au lait", timestamp=1_001.0)
    second = db.append_message(
        "s1",
        "assistant",
        None,
        tool_calls=calls,
        timestamp=1_002.0,
        token_count=12,
        finish_reason="tool_calls",
        reasoning="I should save this",
    )
    third = db.append_message(
        "s1",
        "tool",
        '{"ok": true}',
        tool_call_id="call_1",
        tool_name="memory",
        timestamp=1_003.0,
    )
    assert first < second < third

    messages = db.get_messages("s1")
    assert [m.id for m in messages] == [first, second, third]
    assert messages[1].tool_calls == calls
    assert (messages[1].token_count, messages[1].finish_reason, messages[1].reasoning) == (
        12,
        "tool_calls",
        "I should save this",
    )
    assert [m.to_openai() for m in messages] == [
        {"role": "user", "content": "Please remember café au lait"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "content": '{"ok": true}', "tool_call_id": "call_1", "name": "memory"},
    ]
    assert db.get_messages("missing") == []


def test_counters_accumulate(db: SessionDB) -> None:
    start(db, "s1", started_at=1_000.0)
    db.append_message("s1", "user", "hi", timestamp=1_010.0)
    db.append_message(
        "s1",
        "assistant",
        None,
        timestamp=1_020.0,
        tool_calls=[
            {"id": "a", "type": "function", "function": {"name": "x", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "y", "arguments": "{}"}},
        ],
    )
    db.append_message(
        "s1",
        "assistant",
        None,
        timestamp=1_015.0,
        tool_calls={"id": "c", "type": "function", "function": {"name": "z", "arguments": "{}"}},
    )
    db.add_usage("s1", input_tokens=100, output_tokens=20, cache_read_tokens=5)
    db.add_usage("s1", input_tokens=50, output_tokens=10, cache_write_tokens=3, reasoning_tokens=7)
    record = db.get_session("s1")
    assert record is not None
    assert (record.message_count, record.tool_call_count) == (3, 3)
    assert (
        record.input_tokens,
        record.output_tokens,
        record.cache_read_tokens,
        record.cache_write_tokens,
        record.reasoning_tokens,
    ) == (150, 30, 5, 3, 7)
    assert record.last_active_at == 1_020.0  # an older timestamp never moves it back
    assert db.get_messages("s1")[2].tool_calls == [
        {"id": "c", "type": "function", "function": {"name": "z", "arguments": "{}"}}
    ]


def test_append_to_unknown_session_raises(db: SessionDB) -> None:
    with pytest.raises(SessionDBError, match="unknown session"):
        db.append_message("missing", "user", "hello")


def test_unserialisable_tool_calls_raise(db: SessionDB) -> None:
    start(db, "s1")
    with pytest.raises(SessionDBError, match="JSON"):
        db.append_message("s1", "assistant", None, tool_calls=[{"id": object()}])
    assert db.get_messages("s1") == []


def test_concurrent_appends_from_threads(db: SessionDB) -> None:
    start(db, "s1")

    def write(worker: int) -> None:
        for n in range(25):
            db.append_message("s1", "user", f"worker {worker} message {n}")

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    record = db.get_session("s1")
    assert record is not None
    assert record.message_count == len(db.get_messages("s1")) == 100

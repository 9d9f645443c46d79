"""Full-text search in SessionDB: ranking, snippets, per-user scope, hostile input."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory.errors import SessionDBError
from memory.transcripts import SessionDB
from memory.transcripts._schema import build_fts_query, query_tokens

ALICE = "telegram:100"
BOB = "discord:200"


@pytest.fixture
def db(tmp_path: Path) -> Iterator[SessionDB]:
    database = SessionDB(tmp_path / "sessions.db")
    yield database
    database.close()


def start(db: SessionDB, session_id: str, user_key: str, started_at: float = 1_000.0) -> None:
    platform = user_key.split(":", 1)[0]
    db.create_session(session_id, platform=platform, user_key=user_key, started_at=started_at)


def ts(year: int, month: int, day: int, hour: int = 12) -> float:
    return datetime(year, month, day, hour, tzinfo=UTC).timestamp()


def test_better_match_ranks_first(db: SessionDB) -> None:
    start(db, "s1", ALICE)
    weak = db.append_message(
        "s1",
        "user",
        "Yesterday I read a long article about gardening, cooking, travel, music and "
        "somewhere in the middle it mentioned kubernetes once among many other topics",
    )
    strong = db.append_message(
        "s1", "assistant", "kubernetes kubernetes: your kubernetes cluster needs more nodes"
    )
    db.append_message("s1", "user", "nothing relevant here")
    hits = db.search(ALICE, "kubernetes")
    assert [hit.message_id for hit in hits] == [strong, weak]
    assert hits[0].rank < hits[1].rank


def test_hit_fields_snippet_and_date(db: SessionDB) -> None:
    start(db, "s1", ALICE, started_at=ts(2024, 3, 4))
    filler = " ".join(f"word{n}" for n in range(40))
    message_id = db.append_message(
        "s1",
        "user",
        f"{filler} the secret recipe uses saffron {filler}",
        timestamp=ts(2024, 3, 5, 23),
    )
    [hit] = db.search(ALICE, "saffron")
    assert (hit.session_id, hit.message_id, hit.role) == ("s1", message_id, "user")
    assert ">>>saffron<<<" in hit.snippet
    assert "…" in hit.snippet
    assert hit.date == "2024-03-05"
    assert hit.timestamp == ts(2024, 3, 5, 23)
    assert hit.session_started_at == ts(2024, 3, 4)


def test_only_user_and_assistant_messages_are_searched(db: SessionDB) -> None:
    start(db, "s1", ALICE)
    db.append_message("s1", "system", "platypus in the system prompt")
    db.append_message("s1", "tool", "platypus in a tool result", tool_call_id="c1")
    assert db.search(ALICE, "platypus") == []
    db.append_message("s1", "assistant", "a platypus said hello")
    assert [hit.role for hit in db.search(ALICE, "platypus")] == ["assistant"]


def test_search_is_scoped_to_the_user(db: SessionDB) -> None:
    start(db, "alice-1", ALICE)
    start(db, "alice-2", ALICE, started_at=2_000.0)
    start(db, "bob-1", BOB)
    db.append_message("alice-1", "user", "my password hint is zanzibar")
    db.append_message("alice-2", "user", "zanzibar again")
    db.append_message("bob-1", "user", "shared word lighthouse")

    assert db.search(BOB, "zanzibar") == []
    assert db.for_user(BOB).search("zanzibar") == []
    assert {hit.session_id for hit in db.search(ALICE, "zanzibar")} == {"alice-1", "alice-2"}
    alice = db.for_user(ALICE)
    assert alice.user_key == ALICE
    assert {hit.session_id for hit in alice.search("zanzibar")} == {"alice-1", "alice-2"}
    assert [h.session_id for h in alice.search("zanzibar", exclude_session_id="alice-2")] == [
        "alice-1"
    ]
    assert db.search(ALICE, "zanzibar", exclude_session_id="alice-2")[0].session_id == "alice-1"
    assert alice.search("lighthouse") == []
    assert db.search("", "zanzibar") == []


def test_user_view_needs_a_key(db: SessionDB) -> None:
    with pytest.raises(SessionDBError):
        db.for_user("")


def test_limit(db: SessionDB) -> None:
    start(db, "s1", ALICE)
    for n in range(5):
        db.append_message("s1", "user", f"orchid number {n}")
    assert len(db.search(ALICE, "orchid", limit=3)) == 3
    assert db.search(ALICE, "orchid", limit=0) == []


def test_and_then_or_fallback(db: SessionDB) -> None:
    start(db, "s1", ALICE)
    both = db.append_message("s1", "user", "alpha beta")
    gamma = db.append_message("s1", "user", "gamma only")
    assert [hit.message_id for hit in db.search(ALICE, "alpha beta")] == [both]
    assert {hit.message_id for hit in db.search(ALICE, "alpha gamma")} == {both, gamma}
    assert db.search(ALICE, "delta epsilon") == []


def test_index_follows_updates_and_deletes(db: SessionDB) -> None:
    start(db, "s1", ALICE)
    message_id = db.append_message("s1", "user", "original walrus")
    conn = db._connection()
    conn.execute("UPDATE messages SET content = 'edited narwhal' WHERE id = ?", (message_id,))
    assert db.search(ALICE, "walrus") == []
    assert [hit.message_id for hit in db.search(ALICE, "narwhal")] == [message_id]
    conn.execute("DELETE FROM messages WHERE id = ?", (message_id,))
    assert db.search(ALICE, "narwhal") == []


HOSTILE = [
    '"unbalanced',
    "foo*",
    "NEAR(a b)",
    "a AND OR",
    "(((",
    ")",
    "-x",
    "col:val",
    "'",
    "",
    "   ",
    "?!.,;:()[]{}",
    "AND",
    "OR NOT",
    '"',
    '""',
    "^foo",
    "a + b",
    "content:foo",
    "café",
    "日本語",
    "Ünïcödé wörds",
    "\x00",
    "emoji 🙂 test",
    "x" * 5_000,
    "a " * 500,
]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_raise(db: SessionDB, query: str) -> None:
    start(db, "s1", ALICE)
    db.append_message("s1", "user", "foo val café 日本語 a b x content")
    result = db.search(ALICE, query)
    assert isinstance(result, list)


def test_unicode_words_are_found(db: SessionDB) -> None:
    start(db, "s1", ALICE)
    db.append_message("s1", "user", "un café noir, s'il vous plaît")
    db.append_message("s1", "user", "日本語 を 勉強 して います")
    assert len(db.search(ALICE, "café")) == 1
    assert len(db.search(ALICE, "日本語")) == 1


def test_punctuation_only_finds_nothing(db: SessionDB) -> None:
    start(db, "s1", ALICE)
    db.append_message("s1", "user", "anything at all")
    assert db.search(ALICE, "") == []
    assert db.search(ALICE, "?!... --- ***") == []


def test_query_builder_quotes_every_token() -> None:
    assert query_tokens('NEAR(a b) "x" col:val -y foo*') == [
        "NEAR",
        "a",
        "b",
        "x",
        "col",
        "val",
        "y",
        "foo",
    ]
    assert build_fts_query(["a", "b"]) == '"a" "b"'
    assert build_fts_query(["a", "b"], "OR") == '"a" OR "b"'
    assert build_fts_query(['say"hi']) == '"say""hi"'
    assert build_fts_query([]) == ""

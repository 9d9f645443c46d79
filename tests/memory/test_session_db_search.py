"""Full-text search in SessionDB: ranking, snippets, per-user scope, hostile input."""

from __future__ import annotations

import os
import sqlite3
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory.errors import SessionDBError
from memory.transcripts import SearchHit, SessionDB
from memory.transcripts._schema import USER_SHIFT, build_fts_query, query_tokens
from memory.transcripts._tokens import fts5_tokens

pytest_plugins = ["tests.fakes.postgres_fixtures"]

ALICE = "telegram:100"
BOB = "discord:200"


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionDB]:
    """The same cases on both backends: SQLite's FTS5, PostgreSQL's tsvector."""
    where = (
        tmp_path / "sessions.db"
        if request.param == "sqlite"
        else request.getfixturevalue("postgres_url")
    )
    database = SessionDB(where)
    yield database
    database.close()


@pytest.fixture
def sqlite_db(tmp_path: Path) -> Iterator[SessionDB]:
    """For SQLite's own index internals (FTS5 rowids, user numbers, triggers)."""
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


def test_index_follows_updates_and_deletes(sqlite_db: SessionDB) -> None:
    start(sqlite_db, "s1", ALICE)
    message_id = sqlite_db.append_message("s1", "user", "original walrus")
    conn = sqlite_db._connection()
    conn.execute("UPDATE messages SET content = 'edited narwhal' WHERE id = ?", (message_id,))
    assert sqlite_db.search(ALICE, "walrus") == []
    assert [hit.message_id for hit in sqlite_db.search(ALICE, "narwhal")] == [message_id]
    conn.execute("DELETE FROM messages WHERE id = ?", (message_id,))
    assert sqlite_db.search(ALICE, "narwhal") == []


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


# -- scope at scale: the index is keyed by user, the SQL still joins the user ---------


def assert_index_matches_messages(conn: sqlite3.Connection) -> None:
    """``messages_fts`` holds exactly the tokens of every user and assistant message,
    under the FTS rowid of its user's number and its id, and nothing else."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.indexed_terms"
        " USING fts5vocab(main, messages_fts, instance)"
    )
    indexed: dict[int, list[str]] = defaultdict(list)
    for doc, term in conn.execute("SELECT doc, term FROM temp.indexed_terms ORDER BY doc, offset"):
        indexed[int(doc)].append(str(term))
    rows = conn.execute(
        "SELECT m.fts_rowid, m.id, u.n, m.content, m.role FROM messages AS m"
        " JOIN sessions AS s ON s.id = m.session_id"
        " JOIN user_numbers AS u ON u.user_key = s.user_key"
    ).fetchall()
    assert conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == len(rows)
    for fts_rowid, message_id, number, _, _ in rows:
        assert fts_rowid == (number << USER_SHIFT) | message_id
    # only what a search can return is indexed: user and assistant messages
    expected = {int(row[0]): fts5_tokens(row[3]) for row in rows if row[4] in SEARCHED}
    assert dict(indexed) == {rowid: tokens for rowid, tokens in expected.items() if tokens}
    sized = {int(row[0]) for row in conn.execute("SELECT id FROM messages_fts_docsize")}
    assert sized == set(expected)


SEARCHED = ("user", "assistant")
USERS = [f"telegram:{n}" for n in range(1, 7)]


@pytest.fixture
def crowd(db: SessionDB) -> dict[str, dict[str, list[int]]]:
    """Six users who all say the same things, in two sessions each, interleaved."""
    said: dict[str, dict[str, list[int]]] = {user: {} for user in USERS}
    for user in USERS:
        for session in ("old", "new"):
            start(db, f"{user}/{session}", user)
            said[user][f"{user}/{session}"] = []
    lines = ["lighthouse keeper", "the lighthouse", "keeper of bees", "storm warning"]
    for line in lines:
        for user in USERS:
            for session in ("old", "new"):
                sid = f"{user}/{session}"
                said[user][sid].append(db.append_message(sid, "user", f"{line} {session}"))
    return said


def ids(hits: list[SearchHit]) -> set[int]:
    return {hit.message_id for hit in hits}


def test_other_users_never_come_back_for_the_same_words(
    db: SessionDB, crowd: dict[str, dict[str, list[int]]]
) -> None:
    for user in USERS:
        mine = {message for messages in crowd[user].values() for message in messages}
        for query in ["lighthouse", "keeper", "lighthouse keeper", "bees storm", "old"]:
            hits = db.search(user, query, limit=100)
            assert hits and ids(hits) <= mine, (user, query)
        assert len(db.search(user, "lighthouse", limit=100)) == 4
    if not db.is_postgres:  # FTS5's own tables
        assert_index_matches_messages(db._connection())


def test_the_current_session_is_left_out_and_nobody_elses_fills_in(
    db: SessionDB, crowd: dict[str, dict[str, list[int]]]
) -> None:
    user = USERS[2]
    hits = db.search(user, "lighthouse keeper", limit=100, exclude_session_id=f"{user}/new")
    assert ids(hits) == {crowd[user][f"{user}/old"][0]}
    hits = db.search(user, "new", limit=100, exclude_session_id=f"{user}/new")
    assert hits == []  # every "new" line is in the excluded session, or someone else's
    other = USERS[3]
    hits = db.search(user, "lighthouse", limit=100, exclude_session_id=f"{other}/new")
    assert {hit.session_id for hit in hits} == {f"{user}/old", f"{user}/new"}


def test_the_fallback_only_looks_at_the_users_messages(db: SessionDB) -> None:
    start(db, "alice", ALICE)
    start(db, "bob", BOB)
    alpha = db.append_message("alice", "user", "alpha only")
    gamma = db.append_message("alice", "user", "gamma only")
    db.append_message("bob", "user", "alpha gamma together")  # all tokens, but Bob's
    assert ids(db.search(ALICE, "alpha gamma")) == {alpha, gamma}
    assert [hit.session_id for hit in db.search(BOB, "alpha gamma")] == ["bob"]


def test_a_session_of_an_unknown_user_finds_nothing(db: SessionDB) -> None:
    start(db, "alice", ALICE)
    db.append_message("alice", "user", "lighthouse")
    assert db.search("telegram:404", "lighthouse") == []


def test_a_deleted_session_leaves_the_index(sqlite_db: SessionDB) -> None:
    conn = sqlite_db._connection()
    start(sqlite_db, "a1", ALICE)
    start(sqlite_db, "a2", ALICE)
    start(sqlite_db, "b1", BOB)
    gone = sqlite_db.append_message("a1", "user", "the lighthouse keeper")
    kept = sqlite_db.append_message("a2", "user", "the lighthouse keeper")
    sqlite_db.append_message("b1", "user", "the lighthouse keeper")
    conn.execute("DELETE FROM sessions WHERE id = 'a1'")  # cascades to its messages
    assert ids(sqlite_db.search(ALICE, "lighthouse")) == {kept}
    assert gone not in {m.id for m in sqlite_db.get_messages("a1")}
    assert_index_matches_messages(conn)
    numbers = dict(conn.execute("SELECT user_key, n FROM user_numbers").fetchall())
    assert set(numbers) == {ALICE, BOB}  # Alice still has a session
    conn.execute("DELETE FROM sessions WHERE id = 'a2'")
    assert sqlite_db.search(ALICE, "lighthouse") == []
    assert [hit.session_id for hit in sqlite_db.search(BOB, "lighthouse")] == ["b1"]
    assert set(dict(conn.execute("SELECT user_key, n FROM user_numbers").fetchall())) == {BOB}
    assert_index_matches_messages(conn)
    start(sqlite_db, "a3", ALICE)  # back again: a new number, never an old one
    found = sqlite_db.append_message("a3", "user", "lighthouse once more")
    assert conn.execute("SELECT n FROM user_numbers WHERE user_key = ?", (ALICE,)).fetchone()[
        0
    ] > max(numbers.values())
    assert ids(sqlite_db.search(ALICE, "lighthouse")) == {found}
    assert_index_matches_messages(conn)


def test_plain_sql_writes_keep_the_index_right(sqlite_db: SessionDB) -> None:
    """Rows written without SessionDB (a repair script, an old tool) are indexed too."""
    conn = sqlite_db._connection()
    start(sqlite_db, "alice", ALICE)
    start(sqlite_db, "bob", BOB)
    conn.execute(
        "INSERT INTO messages (session_id, role, content, timestamp)"
        " VALUES ('alice', 'user', 'written by hand: zeppelin', 1.0)"
    )
    [hit] = sqlite_db.search(ALICE, "zeppelin")
    assert hit.session_id == "alice"
    assert sqlite_db.search(BOB, "zeppelin") == []
    conn.execute("UPDATE messages SET content = 'edited: blimp' WHERE id = ?", (hit.message_id,))
    assert sqlite_db.search(ALICE, "zeppelin") == []
    assert ids(sqlite_db.search(ALICE, "blimp")) == {hit.message_id}
    assert_index_matches_messages(conn)
    conn.execute("DELETE FROM messages WHERE id = ?", (hit.message_id,))
    assert sqlite_db.search(ALICE, "blimp") == []
    assert_index_matches_messages(conn)


def test_a_message_never_changes_user(sqlite_db: SessionDB) -> None:
    conn = sqlite_db._connection()
    start(sqlite_db, "alice", ALICE)
    start(sqlite_db, "alice-2", ALICE)
    start(sqlite_db, "bob", BOB)
    message = sqlite_db.append_message("alice", "user", "private words")
    bob_number = conn.execute("SELECT n FROM user_numbers WHERE user_key = ?", (BOB,)).fetchone()
    refused = [
        ("UPDATE messages SET session_id = 'bob' WHERE id = ?", (message,)),
        ("UPDATE messages SET session_id = 'alice-2' WHERE id = ?", (message,)),
        ("UPDATE messages SET user_n = ? WHERE id = ?", (bob_number[0], message)),
        ("UPDATE messages SET id = id + 1000 WHERE id = ?", (message,)),
        ("UPDATE messages SET role = 'tool' WHERE id = ?", (message,)),
        ("UPDATE sessions SET user_key = ? WHERE id = 'alice'", (BOB,)),
        ("UPDATE user_numbers SET n = n + 1000 WHERE user_key = ?", (ALICE,)),
        (
            "INSERT INTO messages (session_id, role, content, timestamp, user_n)"
            " VALUES ('alice', 'user', 'forged', 1.0, ?)",
            (bob_number[0],),
        ),
    ]
    for statement, params in refused:
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(statement, params)
    conn.execute("UPDATE sessions SET user_key = ? WHERE id = 'alice'", (ALICE,))  # no change
    assert ids(sqlite_db.search(ALICE, "private")) == {message}
    assert sqlite_db.search(BOB, "private") == []
    assert sqlite_db.search(BOB, "forged") == []
    assert_index_matches_messages(conn)


def test_tool_output_and_system_text_stay_out_of_the_index(sqlite_db: SessionDB) -> None:
    conn = sqlite_db._connection()
    start(sqlite_db, "s1", ALICE)
    sqlite_db.append_message("s1", "system", "kraken in the system prompt")
    tool = sqlite_db.append_message("s1", "tool", "kraken in a tool result", tool_call_id="c1")
    conn.execute(
        "INSERT INTO messages (session_id, role, content, timestamp)"
        " VALUES ('s1', 'tool', 'kraken by hand', 1.0)"
    )
    assert conn.execute("SELECT COUNT(*) FROM messages_fts_docsize").fetchone()[0] == 0
    conn.execute("UPDATE messages SET content = 'kraken edited' WHERE id = ?", (tool,))
    conn.execute("DELETE FROM messages WHERE id = ?", (tool,))
    assert sqlite_db.search(ALICE, "kraken") == []
    said = sqlite_db.append_message("s1", "user", "a kraken at last")
    assert ids(sqlite_db.search(ALICE, "kraken")) == {said}
    assert_index_matches_messages(conn)


def test_a_forked_child_searches_afresh(db: SessionDB) -> None:
    """The snippet table and the fold table's lock are per process (an rq job is a fork)."""
    start(db, "s1", ALICE)
    db.append_message("s1", "user", "the kraken and the café, déjà vu")
    assert len(db.search(ALICE, "kraken")) == 1  # the parent has made its scratch table
    where = db.location
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            with SessionDB(where) as child:
                hits = child.search(ALICE, "deja kraken")
                code = 0 if [">>>kraken<<<" in hit.snippet for hit in hits] == [True] else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0

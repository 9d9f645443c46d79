"""The work of one user's search follows that user's history, not the whole table's.

No timings: the work is counted in SQLite virtual-machine steps (a progress
handler), which FTS5's own reads of its index are part of, and which is the
same on every run. ``bench/transcript_search.py`` has the timings.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory.errors import SessionDBError
from memory.transcripts import SessionDB
from memory.transcripts._schema import MAX_MESSAGE_ID, MAX_USER_NUMBER, USER_SHIFT

ALICE = "telegram:1"
STEP = 10
"""SQLite VM instructions per progress-handler call."""


def crowded(path: Path, others: int, each: int) -> SessionDB:
    """Alice with 40 messages, and ``others`` users with ``each`` messages each, all
    using Alice's words; the writes of everyone interleave as in a real gateway."""
    db = SessionDB(path)
    db.create_session("alice", platform="telegram", user_key=ALICE)
    for other in range(others):
        db.create_session(f"o{other}", platform="telegram", user_key=f"telegram:{other + 2}")
    for n in range(max(40, each)):
        if n < 40:
            db.append_message("alice", "user", f"the lighthouse keeper {n} walrus storm")
        if n < each:
            for other in range(others):
                db.append_message(f"o{other}", "user", f"the lighthouse keeper {n} storm seal")
    return db


def steps(conn: sqlite3.Connection, run: object) -> int:
    counted = [0]

    def tick() -> int:
        counted[0] += 1
        return 0

    conn.set_progress_handler(tick, STEP)
    try:
        assert callable(run)
        run()
    finally:
        conn.set_progress_handler(None, 0)
    return counted[0]


@pytest.fixture
def small(tmp_path: Path) -> Iterator[SessionDB]:
    with crowded(tmp_path / "small.db", others=4, each=20) as db:
        yield db


@pytest.fixture
def large(tmp_path: Path) -> Iterator[SessionDB]:
    with crowded(tmp_path / "large.db", others=4, each=400) as db:
        yield db


QUERIES = ["lighthouse", "the storm", "keeper walrus", "walrus nowhere", "seal"]


@pytest.mark.parametrize("query", QUERIES)
def test_search_work_does_not_grow_with_other_users_messages(
    small: SessionDB, large: SessionDB, query: str
) -> None:
    def search(db: SessionDB) -> int:
        hits = db.search(ALICE, query, limit=5)
        assert {hit.session_id for hit in hits} <= {"alice"}
        return steps(db._connection(), lambda: db.search(ALICE, query, limit=5))

    few, many = search(small), search(large)
    # 20x more messages from the others: Alice's search does the same work (give or
    # take a deeper b-tree); a match over every user's messages would do ~20x more
    assert many <= few * 1.25 + 5, (few, many)


def test_the_count_sees_work_over_everyones_messages(small: SessionDB, large: SessionDB) -> None:
    """The measure is not blind: a match over the whole index grows with it."""

    def everyone(db: SessionDB) -> int:
        conn = db._connection()
        sql = "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH '\"lighthouse\"'"
        return steps(conn, lambda: conn.execute(sql).fetchall())

    assert everyone(large) > 5 * everyone(small)


def test_fts_rowids_are_one_range_per_user(small: SessionDB) -> None:
    conn = small._connection()
    numbers = dict(conn.execute("SELECT user_key, n FROM user_numbers").fetchall())
    assert sorted(numbers.values()) == list(range(1, len(numbers) + 1))
    rows = conn.execute(
        "SELECT s.user_key, m.id, m.fts_rowid FROM messages AS m"
        " JOIN sessions AS s ON s.id = m.session_id"
    ).fetchall()
    for user_key, message_id, fts_rowid in rows:
        assert fts_rowid >> USER_SHIFT == numbers[user_key]
        assert fts_rowid & MAX_MESSAGE_ID == message_id
    indexed = {row[0] for row in conn.execute("SELECT rowid FROM messages_fts")}
    assert indexed == {fts_rowid for *_, fts_rowid in rows}  # every message is the user's


def test_the_largest_rowid_fits_in_a_signed_64_bit_integer() -> None:
    assert MAX_USER_NUMBER << USER_SHIFT | MAX_MESSAGE_ID == 2**63 - 1
    assert MAX_MESSAGE_ID == 2**40 - 1


def test_numbers_and_ids_beyond_the_range_are_refused(tmp_path: Path) -> None:
    with SessionDB(tmp_path / "state.db") as db:
        conn = db._connection()
        db.create_session("s1", platform="telegram", user_key=ALICE)
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(
                "INSERT INTO user_numbers (n, user_key) VALUES (?, 'telegram:big')",
                (MAX_USER_NUMBER + 1,),
            )
        conn.execute(
            "INSERT INTO user_numbers (n, user_key) VALUES (?, 'telegram:last')",
            (MAX_USER_NUMBER,),
        )
        db.create_session("last", platform="telegram", user_key="telegram:last")
        last = db.append_message("last", "user", "the very last user")
        assert [hit.message_id for hit in db.search("telegram:last", "last")] == [last]
        with pytest.raises(SessionDBError, match="CHECK"):  # no number left to give
            db.create_session("more", platform="telegram", user_key="telegram:one-too-many")
        assert db.get_session("more") is None
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(
                "INSERT INTO messages (id, session_id, role, content, timestamp)"
                " VALUES (?, 's1', 'user', 'too far', 1.0)",
                (MAX_MESSAGE_ID + 1,),
            )

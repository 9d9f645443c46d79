"""Ranking of a user's hits: FTS5's bm25 formula over the user's own messages.

The tokens are made in Python the way FTS5's unicode61 made them (checked against
FTS5 itself); in a database of one user the rank equals ``bm25(messages_fts)``;
with several users, nobody else's messages move a user's ranking.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest

from memory.transcripts import SearchHit, SessionDB
from memory.transcripts._rank import decode_size
from memory.transcripts._schema import build_fts_query, query_tokens
from memory.transcripts._tokens import fts5_tokens

ALICE = "telegram:100"
BOB = "telegram:200"

SAMPLES = [
    "plain ascii words, with punctuation! and digits 42 x86_64 foo-bar",
    "café CAFÉ cafe\u0301 naïve Ångström straße",
    "İstanbul ΣΊΣΥΦΟΣ σίσυφος ς Ωmega",
    "мой мои Й ёлка Ёлка",
    "日本語を勉強 中文 한국어",
    "ǅemal ỘṢ ộ ﬁne １２３ ｆｕｌｌ",
    "soft\u00adhyphen zero\u200bwidth tab\tnew\nline",
    "emoji 🙂 in 🚀 text a😀b a𠀀b",
    "x \u0301 y e\u0301x \u0301",
    "UPPER lower MiXeD",
]

ALPHABET = (
    "abcXYZ019 _-.,'\"()\t\n"
    "éèêëÉÈàâäÀçÇñÑøØåÅæÆœßÿ"
    "ąęłńśźżĄĘŁŃŚŹŻđĐħĦıİ"
    "αβγδΣσςάέήίόύώΆΈΪΫ"
    "абвгдеёжзийАБВГДЕЁЖЗИЙїієґЇІЄҐ"
    "日本語中文한국어ひらがなカタカナ"
    "\u0300\u0301\u0302\u0308\u0327\u200b\u00ad\u2028\u3000"
    "ǅǈǋỘṢộṣ①②¹²½ﬁﬂ１２ＡＢａｂ"
    "🙂🚀😀𠀀𝔘𝔫"
)


def fts5_index_tokens(texts: list[str]) -> list[list[str]]:
    """The tokens FTS5 itself stored for each text, in order."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        conn.execute("CREATE VIRTUAL TABLE t_terms USING fts5vocab(t, instance)")
        for number, text in enumerate(texts, start=1):
            conn.execute("INSERT INTO t (rowid, x) VALUES (?, ?)", (number, text))
        rows = conn.execute("SELECT doc, term FROM t_terms ORDER BY doc, offset").fetchall()
    finally:
        conn.close()
    tokens: list[list[str]] = [[] for _ in texts]
    for doc, term in rows:
        tokens[doc - 1].append(term)
    return tokens


@pytest.fixture
def db(tmp_path: Path) -> Iterator[SessionDB]:
    database = SessionDB(tmp_path / "sessions.db")
    yield database
    database.close()


def start(db: SessionDB, session_id: str, user_key: str) -> None:
    db.create_session(session_id, platform="telegram", user_key=user_key, started_at=1_000.0)


def test_tokens_are_the_ones_fts5_makes() -> None:
    rng = random.Random(7)
    texts = [*SAMPLES, *("".join(rng.choices(ALPHABET, k=rng.randint(1, 60))) for _ in range(400))]
    assert [fts5_tokens(text) for text in texts] == fts5_index_tokens(texts)
    assert fts5_tokens(None) == fts5_tokens("") == []


@pytest.mark.parametrize(
    "block", [0x0080, 0x0100, 0x0180, 0x0300, 0x0370, 0x0400, 0x1E00, 0x2000, 0x3000, 0xFF00]
)
def test_every_code_point_of_a_block_folds_as_in_fts5(block: int) -> None:
    chars = [chr(code) for code in range(block, block + 0x80)]
    texts = [f"x{char}y {char} Q{char}{char}Z" for char in chars]
    assert [fts5_tokens(text) for text in texts] == fts5_index_tokens(texts)


def test_docsize_varints() -> None:
    assert [decode_size(bytes(blob)) for blob in ([0], [5], [0x7F], [0x81, 0x00])] == [
        0,
        5,
        127,
        128,
    ]
    assert decode_size(bytes([0x81, 0x80, 0x00])) == 1 << 14


def fts5_bm25(db: SessionDB, query: str, operator: Literal["AND", "OR"]) -> dict[int, float]:
    """``bm25(messages_fts)`` of every user or assistant message the FTS5 match finds."""
    conn = db._connection()
    rows = conn.execute(
        "SELECT m.id, bm25(messages_fts) FROM messages_fts"
        " JOIN messages AS m ON m.fts_rowid = messages_fts.rowid"
        " WHERE messages_fts MATCH ? AND m.role IN ('user', 'assistant')",
        (build_fts_query(query_tokens(query), operator),),
    ).fetchall()
    return {int(message_id): float(rank) for message_id, rank in rows}


def test_with_one_user_the_rank_is_fts5s_bm25(db: SessionDB) -> None:
    """Alone in the database, the user's statistics are the table's: the same numbers."""
    rng = random.Random(11)
    words = ["lighthouse", "keeper", "storm", "café", "σίσυφος", "ёлка", "x86_64", "日本語"]
    start(db, "s1", ALICE)
    start(db, "s2", ALICE)
    db.append_message("s1", "assistant", None)  # a tool call: empty content, still a row
    db.append_message("s1", "tool", "lighthouse keeper storm log", tool_call_id="c1")
    for _ in range(120):
        count = rng.randint(1, 30)
        text = " ".join(rng.choices([*words, "filler", "more", "words"], k=count))
        db.append_message(rng.choice(["s1", "s2"]), rng.choice(["user", "assistant"]), text)
    for query, operator in [
        ("lighthouse", "AND"),
        ("keeper storm", "AND"),
        ("storm storm", "AND"),
        ("CAFE", "AND"),
        ("ΣΊΣΥΦΟΣ", "AND"),
        ("Ёлка x86_64", "AND"),
        ("日本語 storm", "AND"),
        ("lighthouse nowhere_to_be_found", "OR"),  # the any-token fallback
    ]:
        expected = fts5_bm25(db, query, operator)
        hits = db.search(ALICE, query, limit=100)
        assert len(hits) == len(expected), query
        for hit in hits:
            assert hit.rank == pytest.approx(expected[hit.message_id], rel=1e-12, abs=1e-15)
        assert [h.rank for h in hits] == sorted(h.rank for h in hits)


def ranking(hits: list[SearchHit]) -> list[tuple[int, float]]:
    return [(hit.message_id, hit.rank) for hit in hits]


def test_other_users_messages_do_not_move_a_users_ranking(db: SessionDB) -> None:
    start(db, "alice", ALICE)
    start(db, "bob", BOB)
    for text in [
        "the orchid needs water",
        "orchid orchid: repot the orchid in spring",
        "water the fern and the orchid",
        "a long note about the garden, the fern, the water butt and one orchid",
    ]:
        db.append_message("alice", "user", text)
    queries = ["orchid", "orchid water", "fern orchid", "water butt"]
    before = {query: ranking(db.search(ALICE, query)) for query in queries}
    for n in range(200):
        db.append_message("bob", "user", f"orchid water fern {n} " + "orchid " * (n % 3))
    assert {query: ranking(db.search(ALICE, query)) for query in queries} == before

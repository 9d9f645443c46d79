"""BM25 over one user's own messages: FTS5's ``bm25()`` formula, the user's statistics.

FTS5's ``bm25()`` takes its collection statistics from the whole table: for every
phrase of the query it walks the phrase's doclist over every user's messages to
count the rows that hold it. For a common word that walk is the cost of the
whole search, and it grows with everyone's history. Here the collection is the
asking user's indexed (user and assistant) messages, their rowid range of
``messages_fts``:

- ``rows`` and ``avgdl`` from the user's ``messages_fts_docsize`` rows (the token
  count FTS5 stored for each message);
- per phrase, the number of the user's rows that hold it (an FTS5 count inside
  the range);
- per match, each phrase's frequency in the message's text (the tokens of
  ``fts5_tokens``; in ASCII text a word is found directly, with no letter or
  digit on either side) and its length from ``messages_fts_docsize``.

The score is FTS5's: ``-sum(idf * f * (k1 + 1) / (f + k1 * (1 - b + b * dl / avgdl)))``
with ``k1 = 1.2``, ``b = 0.75``, ``idf = log((N - n + 0.5) / (n + 0.5))`` raised
to ``1e-6`` when not positive, lower is better; in a database that holds one
user only it equals ``bm25(messages_fts)``. Besides following the user's own
history in cost, the order of a user's hits no longer moves with what other
users write.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memory.transcripts._schema import build_fts_query
from memory.transcripts._tokens import fts5_tokens

__all__ = ["Collection", "Match", "Ranked", "Scorer", "decode_size"]

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6


def decode_size(blob: bytes) -> int:
    """The first varint of a ``messages_fts_docsize.sz`` blob: the message's token count."""
    value = 0
    for index, byte in enumerate(blob):
        if index == 8:  # the ninth byte of a varint holds 8 bits
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value
    return value


@dataclass(frozen=True, slots=True)
class Collection:
    """The user's indexed messages: each one's docsize blob (by FTS rowid), their mean length."""

    sizes: dict[int, bytes]
    avgdl: float

    @property
    def rows(self) -> int:
        return len(self.sizes)

    @classmethod
    def of(cls, conn: sqlite3.Connection, low: int, high: int) -> Collection:
        """One pass over the user's ``messages_fts_docsize`` rows (one range of it)."""
        cur = conn.cursor()
        cur.row_factory = None
        sizes: dict[int, bytes] = dict(
            cur.execute(
                "SELECT id, sz FROM messages_fts_docsize WHERE id BETWEEN ? AND ?", (low, high)
            )
        )
        joined = b"".join(sizes.values())
        if len(joined) == len(sizes):  # every message under 128 tokens: one byte each
            tokens = sum(joined)
        else:
            tokens = sum(decode_size(size) for size in sizes.values())
        return cls(sizes, tokens / len(sizes) if sizes else 0.0)


Match = tuple[int, int, float, str | None]
"""One match as ``_search`` reads it: FTS rowid, message id, timestamp, content."""

Ranked = tuple[float, float, int, int]
"""``(score, -timestamp, -message id, FTS rowid)``: sorted, the best match comes first."""


class Scorer:
    """Scores the user's matches of one query's phrases (one per query token)."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        query_tokens: Sequence[str],
        collection: Collection,
        low: int,
        high: int,
    ) -> None:
        self._sizes = collection.sizes
        self._avgdl = collection.avgdl
        # FTS5 tokenizes each quoted query token into a phrase of one or more tokens
        self._phrases = [tuple(fts5_tokens(token)) for token in query_tokens]
        holding = [_holding(conn, token, low, high) for token in query_tokens]
        self._idf = [_idf(count, collection.rows) for count in holding]
        # a phrase none of the user's messages holds adds 0 to every score: left out
        self._weighted = [
            (idf, phrase)
            for idf, phrase, count in zip(self._idf, self._phrases, holding, strict=True)
            if count
        ]

    def rank(self, matches: Iterable[Match]) -> list[Ranked]:
        """Every match with its score, best first (ties: newer first)."""
        weighted = self._weighted
        words = [(idf, phrase[0], len(phrase[0])) for idf, phrase in weighted if len(phrase) == 1]
        if len(words) < len(weighted):  # a phrase of several tokens ("x86_64"), or none
            words = []
        sizes, norm_of = self._sizes, self._norm
        norms: dict[bytes, float] = {}  # by docsize blob: messages have few distinct lengths
        find = str.find
        boost = K1 + 1.0
        ranked: list[Ranked] = []
        append = ranked.append
        for fts_rowid, message_id, timestamp, content in matches:
            blob = sizes.get(fts_rowid, b"\x00")
            norm = norms.get(blob)
            if norm is None:
                norm = norms[blob] = norm_of(blob[0] if len(blob) == 1 else decode_size(blob))
            score = 0.0
            if words and content is not None and content.isascii():
                text = content.lower()  # as unicode61 folds ASCII
                last = len(text)
                for idf, word, length in words:
                    # a token: an occurrence with no letter or digit on either side (two
                    # such never overlap, so the next is looked for after this one)
                    freq = 0
                    start = find(text, word)
                    while start >= 0:
                        end = start + length
                        if (start == 0 or not text[start - 1].isalnum()) and (
                            end == last or not text[end].isalnum()
                        ):
                            freq += 1
                        start = find(text, word, end)
                    if freq:  # a phrase that is not there adds 0 (exactly)
                        score += idf * ((freq * boost) / (freq + norm))
            else:
                tokens = fts5_tokens(content)
                for idf, phrase in weighted:
                    freq = _frequency(tokens, phrase)
                    if freq:
                        score += idf * ((freq * boost) / (freq + norm))
            append((-score, -timestamp, -message_id, fts_rowid))
        ranked.sort()
        return ranked

    def _norm(self, size: int) -> float:
        """``k1 * (1 - b + b * dl / avgdl)`` for a message of ``size`` tokens."""
        return K1 * (1 - B + B * size / self._avgdl) if self._avgdl else K1


def _holding(conn: sqlite3.Connection, token: str, low: int, high: int) -> int:
    """How many of the user's messages hold a query token's phrase."""
    found = conn.execute(
        "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ? AND rowid BETWEEN ? AND ?",
        (build_fts_query([token]), low, high),
    ).fetchone()
    return int(found[0])


def _idf(holding: int, rows: int) -> float:
    """FTS5's IDF of a phrase held by ``holding`` of ``rows`` messages (at least 1e-6)."""
    idf = math.log((rows - holding + 0.5) / (holding + 0.5))
    return idf if idf > 0.0 else MIN_IDF


def _frequency(tokens: list[str], phrase: tuple[str, ...]) -> int:
    """How often ``phrase`` occurs in ``tokens`` (overlapping occurrences too, as FTS5)."""
    if len(phrase) == 1:
        return tokens.count(phrase[0])
    if not phrase:
        return 0
    width = len(phrase)
    first = phrase[0]
    return sum(
        1
        for start, token in enumerate(tokens[: len(tokens) - width + 1])
        if token == first and tuple(tokens[start : start + width]) == phrase
    )

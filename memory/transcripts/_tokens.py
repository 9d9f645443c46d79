"""The tokens FTS5's ``unicode61`` tokenizer makes of a text, computed in Python.

Ranking a user's matches (``_rank``) needs each match's term frequencies, which
SQL cannot ask FTS5 for without ``bm25()`` — and ``bm25()`` scans the whole
table. So the tokens are made here, the way the index made them.

``unicode61`` (default options, as ``messages_fts`` uses) treats every code
point on its own: it is a separator, or a token character folded to one code
point (lower case, Latin diacritics removed) or to nothing (a combining mark).
ASCII is known: letters and digits are token characters, A-Z folds to a-z.
Any other code point is learnt from the SQLite library in use, the first time
it is met, by indexing ``a<c>b`` in a private in-memory FTS5 table and reading
back the tokens (``["a", "b"]``: a separator; ``["a<d>b"]``: folds to ``d``).
"""

from __future__ import annotations

import os
import sqlite3
import threading

__all__ = ["fts5_tokens"]

_ASCII = bytes(
    byte if chr(byte).isascii() and chr(byte).isalnum() else 0x20 for byte in range(256)
).lower()
"""``bytes.translate`` table: ASCII letters and digits kept (lower case), all else a space."""


BLOCK = 256
"""Code points learnt together: the first one met of a script brings its neighbours."""


class _Folds(dict[int, str]):
    """A ``str.translate`` table doing what ``unicode61`` does to each code point: a
    separator becomes a space, a token character its fold (``""`` when dropped).

    ASCII is filled in; any other code point is learnt when ``translate`` first
    looks it up (``__missing__``), with the rest of its block of ``BLOCK``, and
    kept for good.
    """

    def __init__(self) -> None:
        super().__init__(
            (code, chr(code).lower() if chr(code).isalnum() else " ") for code in range(128)
        )
        self._lock = threading.Lock()

    def __missing__(self, code: int) -> str:
        with self._lock:
            if code not in self:
                first = code - code % BLOCK
                self.update(_probe([c for c in range(first, first + BLOCK) if _encodable(c)]))
        return self.get(code, " ")  # a lone surrogate, which no stored text holds


def _encodable(code: int) -> bool:
    return not 0xD800 <= code <= 0xDFFF and code <= 0x10FFFF


def _probe(codes: list[int]) -> dict[int, str]:
    """What ``unicode61`` does to each of ``codes``, read back from a throw-away index."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE probe USING fts5(x)")
        conn.execute("CREATE VIRTUAL TABLE probe_terms USING fts5vocab(probe, instance)")
        conn.execute(
            "INSERT INTO probe (rowid, x) VALUES (1, ?)",
            (" ".join(f"a{chr(code)}b" for code in codes),),
        )
        terms = [row[0] for row in conn.execute("SELECT term FROM probe_terms ORDER BY offset")]
    finally:
        conn.close()
    learnt: dict[int, str] = {}
    position = 0
    for code in codes:
        term = terms[position]
        if term == "a":  # "a", "b": the code point separated them
            learnt[code] = " "
            position += 2
        else:  # "a<fold>b"
            learnt[code] = term[1:-1]
            position += 1
    return learnt


_FOLDS = _Folds()


def _new_lock_in_child() -> None:
    """A forked child must not inherit the lock in the state another thread left it."""
    _FOLDS._lock = threading.Lock()


os.register_at_fork(after_in_child=_new_lock_in_child)


def fts5_tokens(text: str | None) -> list[str]:
    """The tokens ``unicode61`` (remove_diacritics 1) makes of ``text``, in order."""
    if not text:
        return []
    if text.isascii():
        return text.encode("ascii").translate(_ASCII).decode("ascii").split()
    # split on the spaces the table put in only: no token character is a space, but
    # some are whitespace to str.split()
    return [token for token in text.translate(_FOLDS).split(" ") if token]

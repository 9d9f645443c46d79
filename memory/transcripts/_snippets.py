"""Snippets of a search's hits, made by FTS5 from the hits' text alone.

``messages_fts`` is contentless, so ``snippet()`` cannot run on it. A snippet
depends only on the text, the query's phrases and the tokenizer — no statistic
of the index — so the hits are indexed in a private in-memory FTS5 table (same
tokenizer), ``snippet()`` runs there, and the insert is rolled back.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Mapping

__all__ = ["snippets"]


class _Scratch:
    """One in-memory FTS5 table, empty between calls; calls are serialised."""

    def __init__(self) -> None:
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def snippets(
        self,
        match: str,
        texts: Mapping[int, str],
        open_: str,
        close: str,
        ellipsis: str,
        tokens: int,
    ) -> dict[int, str]:
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN")
            try:
                conn.executemany("INSERT INTO hits (rowid, content) VALUES (?, ?)", texts.items())
                rows = conn.execute(
                    "SELECT rowid, snippet(hits, 0, ?, ?, ?, ?) FROM hits WHERE hits MATCH ?",
                    (open_, close, ellipsis, tokens, match),
                ).fetchall()
            finally:
                conn.execute("ROLLBACK")  # empty again for the next search
        return {int(rowid): str(snippet) for rowid, snippet in rows}

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
            conn.execute("CREATE VIRTUAL TABLE hits USING fts5(content)")
            self._conn = conn
        return self._conn


_SCRATCH = _Scratch()


def _forget_in_child() -> None:
    """A forked child starts afresh: no connection or lock carried across the fork."""
    global _SCRATCH
    _SCRATCH = _Scratch()


os.register_at_fork(after_in_child=_forget_in_child)


def snippets(
    match: str, texts: Mapping[int, str], open_: str, close: str, ellipsis: str, tokens: int
) -> dict[int, str]:
    """``snippet(…, open_, close, ellipsis, tokens)`` of each text (by id) for ``match``."""
    if not texts:
        return {}
    return _SCRATCH.snippets(match, texts, open_, close, ellipsis, tokens)

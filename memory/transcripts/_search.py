"""Full-text search over one user's transcripts.

The user scope is part of the SQL, never a filter applied to a global result:
the FTS5 match runs inside the user's rowid range of ``messages_fts`` (see
``_schema``: a rowid is ``user number << 40 | message id``), and the matches are
joined to the user's sessions by ``sessions.user_key`` as well. So the work of
a search follows the asking user's history, not everyone's: the match seeks
into the range instead of walking the doclists of every user's messages, and
the ranking (``_rank``) takes its statistics from the same range.

Search text from users or the model is never passed to FTS5 as syntax: it is
reduced to quoted word tokens first. All tokens must match; if nothing does,
any of them may. Snippets are made for the hits returned only (``_snippets``).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from memory.transcripts._rank import Collection, Scorer
from memory.transcripts._records import SearchHit, utc_date
from memory.transcripts._schema import (
    INDEXED_ROLES,
    MAX_MESSAGE_ID,
    USER_SHIFT,
    build_fts_query,
    query_tokens,
)
from memory.transcripts._snippets import snippets

__all__ = ["MAX_SEARCH_LIMIT", "SNIPPET_TOKENS", "search_messages"]

logger = logging.getLogger(__name__)

MAX_SEARCH_LIMIT = 100
"""Most hits one search returns, whatever limit the caller asks for."""

SNIPPET_TOKENS = 16
"""Tokens of context around the match in a hit's snippet."""

SEARCHED_ROLES = INDEXED_ROLES
"""Roles whose messages are searched (the indexed ones); tool output and system text are not."""

_ROLES = ", ".join(f"'{role}'" for role in SEARCHED_ROLES)

_MATCHES_SQL = f"""
SELECT messages_fts.rowid, m.id, m.timestamp, m.content
FROM messages_fts
JOIN messages AS m ON m.id = messages_fts.rowid & {MAX_MESSAGE_ID:d}
WHERE messages_fts MATCH :match
  AND messages_fts.rowid BETWEEN :low AND :high
  AND m.session_id IN (SELECT id FROM sessions WHERE user_key = :user_key)
  AND m.session_id IS NOT :exclude
  AND m.role IN ({_ROLES})
"""
"""Every match of the user's: the rowid range first, then the user's sessions."""

_HITS_SQL = """
SELECT m.id, m.session_id, m.role, m.content, s.started_at
FROM messages AS m
JOIN sessions AS s ON s.id = m.session_id
WHERE m.id IN ({ids}) AND s.user_key = :user_key
"""
"""The hits kept (``{ids}``: one parameter each), with their sessions and text."""


@dataclass(frozen=True, slots=True)
class _Scope:
    user_key: str
    low: int
    high: int
    exclude: str | None
    limit: int


def search_messages(
    conn: sqlite3.Connection,
    user_key: str,
    query: str,
    limit: int,
    exclude_session_id: str | None,
) -> list[SearchHit]:
    """Search ``user_key``'s messages: all tokens first, any token if that finds nothing."""
    tokens = query_tokens(query)
    limit = min(limit, MAX_SEARCH_LIMIT)
    if not tokens or limit <= 0 or not user_key:
        return []
    row = conn.execute("SELECT n FROM user_numbers WHERE user_key = ?", (user_key,)).fetchone()
    if row is None:  # no session of this user is stored
        return []
    low = int(row[0]) << USER_SHIFT
    scope = _Scope(user_key, low, low | MAX_MESSAGE_ID, exclude_session_id, limit)
    scorer: Scorer | None = None

    def scoring() -> Scorer:
        """The user's statistics, read once, and only for a search that matched."""
        nonlocal scorer
        if scorer is None:
            collection = Collection.of(conn, scope.low, scope.high)
            scorer = Scorer(conn, tokens, collection, scope.low, scope.high)
        return scorer

    with _snapshot(conn):  # statistics, matches and snippets from one state of the file
        hits = _run(conn, build_fts_query(tokens, "AND"), scoring, scope)
        if not hits and len(tokens) > 1:
            logger.debug("no hit for all %d tokens; retrying with any token", len(tokens))
            hits = _run(conn, build_fts_query(tokens, "OR"), scoring, scope)
    return hits


@contextmanager
def _snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """A read transaction around the block, unless the caller holds one already."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


def _run(
    conn: sqlite3.Connection, match: str, scoring: Callable[[], Scorer], scope: _Scope
) -> list[SearchHit]:
    params = {
        "match": match,
        "low": scope.low,
        "high": scope.high,
        "user_key": scope.user_key,
        "exclude": scope.exclude,
    }
    cur = conn.cursor()
    cur.row_factory = None
    matches = cur.execute(_MATCHES_SQL, params).fetchall()
    if not matches:
        return []
    ranked = scoring().rank(matches)[: scope.limit]
    kept = {f"hit{index}": -negative_id for index, (_, _, negative_id, _) in enumerate(ranked)}
    sql = _HITS_SQL.replace("{ids}", ", ".join(f":{name}" for name in kept))
    details = {row[0]: row for row in cur.execute(sql, {"user_key": scope.user_key, **kept})}
    marked = snippets(
        match,
        {message_id: row[3] for message_id, row in details.items()},
        ">>>",
        "<<<",
        "…",
        SNIPPET_TOKENS,
    )
    hits: list[SearchHit] = []
    for rank, negative_time, negative_id, _ in ranked:
        found = details.get(-negative_id)
        if found is None:  # pragma: no cover - one snapshot: the match is still there
            continue
        message_id, session_id, role, _, started_at = found
        timestamp = -negative_time
        hits.append(
            SearchHit(
                session_id=session_id,
                message_id=message_id,
                role=role,
                snippet=marked.get(message_id, ""),
                timestamp=timestamp,
                session_started_at=started_at,
                date=utc_date(timestamp),
                rank=rank,
            )
        )
    return hits

"""Full-text search over one user's transcripts.

The user scope is part of the SQL (a join on ``sessions.user_key``), never a
filter applied to a global result. Search text from users or the model is
never passed to FTS5 as syntax: it is reduced to quoted word tokens first.
"""

from __future__ import annotations

import logging
import sqlite3

from memory.transcripts._records import SearchHit, utc_date
from memory.transcripts._schema import build_fts_query, query_tokens

__all__ = ["MAX_SEARCH_LIMIT", "SNIPPET_TOKENS", "search_messages"]

logger = logging.getLogger(__name__)

MAX_SEARCH_LIMIT = 100
"""Most hits one search returns, whatever limit the caller asks for."""

SNIPPET_TOKENS = 16
"""Tokens of context around the match in a hit's snippet."""

SEARCHED_ROLES = ("user", "assistant")
"""Roles whose messages are searched; tool output and system text are not."""

_SEARCH_SQL = f"""
SELECT m.id AS message_id, m.session_id, m.role, m.timestamp,
       s.started_at AS session_started_at,
       snippet(messages_fts, 0, '>>>', '<<<', '…', {SNIPPET_TOKENS:d}) AS snippet,
       bm25(messages_fts) AS rank
FROM messages_fts
JOIN messages AS m ON m.id = messages_fts.rowid
JOIN sessions AS s ON s.id = m.session_id
WHERE messages_fts MATCH ?
  AND s.user_key = ?
  AND s.id IS NOT ?
  AND m.role IN ({", ".join("?" for _ in SEARCHED_ROLES)})
ORDER BY rank, m.timestamp DESC, m.id DESC
LIMIT ?
"""


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
    hits = _run(conn, user_key, build_fts_query(tokens, "AND"), limit, exclude_session_id)
    if not hits and len(tokens) > 1:
        logger.debug("no hit for all %d tokens; retrying with any token", len(tokens))
        hits = _run(conn, user_key, build_fts_query(tokens, "OR"), limit, exclude_session_id)
    return hits


def _run(
    conn: sqlite3.Connection,
    user_key: str,
    match: str,
    limit: int,
    exclude_session_id: str | None,
) -> list[SearchHit]:
    rows = conn.execute(
        _SEARCH_SQL, (match, user_key, exclude_session_id, *SEARCHED_ROLES, limit)
    ).fetchall()
    return [
        SearchHit(
            session_id=row["session_id"],
            message_id=row["message_id"],
            role=row["role"],
            snippet=row["snippet"],
            timestamp=row["timestamp"],
            session_started_at=row["session_started_at"],
            date=utc_date(row["timestamp"]),
            rank=row["rank"],
        )
        for row in rows
    ]

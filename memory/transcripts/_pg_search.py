"""Full-text search over one user's transcripts in PostgreSQL (tsvector, GIN).

The same contract as the SQLite search (``_search``): the user scope is part
of the SQL (the matches are joined to the user's own sessions by
``sessions.user_key``), user text is never query syntax (each word token
becomes its own ``plainto_tsquery``, combined with ``&&`` or ``||``), all
tokens must match and, if nothing does, any of them may. Ranking is
PostgreSQL's ``ts_rank`` over the message, normalised by its length, negated
so that lower is better as with BM25. Snippets come from the same in-memory
FTS5 routine as SQLite's, made from the hits' text only.
"""

from __future__ import annotations

import logging

from memory.database import Connection
from memory.transcripts._records import SearchHit, utc_date
from memory.transcripts._schema import build_fts_query, query_tokens
from memory.transcripts._search import MAX_SEARCH_LIMIT, SNIPPET_TOKENS
from memory.transcripts._snippets import snippets

__all__ = ["search_messages_pg"]

logger = logging.getLogger(__name__)

_SQL = """
SELECT m.id, m.session_id, m.role, m.content, m.timestamp, s.started_at,
       ts_rank(m.tsv, q.query, 1) AS score
FROM (SELECT {query} AS query) AS q,
     messages AS m JOIN sessions AS s ON s.id = m.session_id
WHERE s.user_key = ? AND m.tsv @@ q.query AND m.session_id IS NOT ?
ORDER BY score DESC, m.timestamp DESC, m.id DESC
LIMIT ?
"""


def search_messages_pg(
    conn: Connection,
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
    hits = _run(conn, tokens, "&&", user_key, exclude_session_id, limit)
    if not hits and len(tokens) > 1:
        logger.debug("no hit for all %d tokens; retrying with any token", len(tokens))
        hits = _run(conn, tokens, "||", user_key, exclude_session_id, limit)
    return hits


def _run(
    conn: Connection,
    tokens: list[str],
    operator: str,
    user_key: str,
    exclude: str | None,
    limit: int,
) -> list[SearchHit]:
    query = f" {operator} ".join("plainto_tsquery('simple'::regconfig, ?)" for _ in tokens)
    rows = conn.execute(
        _SQL.replace("{query}", query), (*tokens, user_key, exclude, limit)
    ).fetchall()
    if not rows:
        return []
    match = build_fts_query(tokens, "AND" if operator == "&&" else "OR")
    marked = snippets(
        match, {int(row[0]): row[3] or "" for row in rows}, ">>>", "<<<", "…", SNIPPET_TOKENS
    )
    return [
        SearchHit(
            session_id=str(row[1]),
            message_id=int(row[0]),
            role=str(row[2]),
            snippet=marked.get(int(row[0]), ""),
            timestamp=float(row[4]),
            session_started_at=float(row[5]),
            date=utc_date(float(row[4])),
            rank=-float(row[6]),
        )
        for row in rows
    ]

"""The ``session_search`` tool: full-text search over the asking user's own past sessions.

It is bound to an ``AsyncUserSessions`` view built for one user key, so there is
no parameter through which another user's transcripts could be reached.
"""

from __future__ import annotations

import json
from typing import Any

from agent.tools.registry import function_schema
from memory.transcripts import AsyncUserSessions

MAX_RESULTS = 20

SESSION_SEARCH_DESCRIPTION = (
    "Search the transcripts of your past conversations with this user (full-text, "
    "keywords). Use it when the user refers to something discussed before, or to recall "
    "task progress and outcomes that are not in memory. Returns dated snippets; "
    "matching words are marked >>>like this<<<."
)

SESSION_SEARCH_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Keywords to look for."},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "default": 5},
    },
    "required": ["query"],
}

SESSION_SEARCH_SCHEMA = function_schema(
    "session_search", SESSION_SEARCH_DESCRIPTION, SESSION_SEARCH_PARAMETERS
)


async def run_session_search(
    sessions: AsyncUserSessions, arguments: dict[str, Any], *, current_session_id: str
) -> str:
    query = str(arguments.get("query") or "").strip()
    if not query:
        return json.dumps({"success": False, "error": "query must not be empty"})
    try:
        limit = int(arguments.get("limit") or 5)
    except (TypeError, ValueError):
        limit = 5
    limit = max(1, min(MAX_RESULTS, limit))
    hits = await sessions.search(query, limit=limit, exclude_session_id=current_session_id)
    results = [
        {"session_id": hit.session_id, "date": hit.date, "role": hit.role, "snippet": hit.snippet}
        for hit in hits
    ]
    return json.dumps(
        {"success": True, "query": query, "count": len(results), "results": results},
        ensure_ascii=False,
    )

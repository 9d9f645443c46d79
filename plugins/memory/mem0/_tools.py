"""The four mem0 tools: their schemas and the checks of their arguments.

The checks raise :class:`ToolError` with a message the model can act on; the
provider returns it as ``{"success": false, "error": ...}``.
"""

from __future__ import annotations

import uuid
from typing import Any

from memory.providers import strip_memory_context
from memory.store import scan_memory_content
from plugins.memory._kit import BadToolInput

from ._config import MAX_SEARCH_LIMIT

MEM0_SEARCH = "mem0_search"
MEM0_ADD = "mem0_add"
MEM0_UPDATE = "mem0_update"
MEM0_DELETE = "mem0_delete"
TOOL_NAMES = (MEM0_SEARCH, MEM0_ADD, MEM0_UPDATE, MEM0_DELETE)
MAX_CONTENT = 2000
MAX_QUERY = 1000


class ToolError(BadToolInput):
    """Bad tool input; the message goes back to the model."""


_ID = {
    "type": "string",
    "description": "The id of one of this person's memories, as mem0_search returned it.",
}
_CONTENT = {
    "type": "string",
    "description": f"One self-contained fact, at most {MAX_CONTENT} characters.",
}

SCHEMAS: list[dict[str, Any]] = [
    {
        "name": MEM0_SEARCH,
        "description": (
            "Search your long-term memory of the person you are talking to (facts, "
            "preferences and plans from earlier conversations). Returns memories with ids."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_SEARCH_LIMIT,
                    "description": "How many memories at most.",
                },
            },
            "required": ["query"],
        },
    },
    {
        "name": MEM0_ADD,
        "description": (
            "Remember one durable fact about the person you are talking to, for later "
            "conversations. Not for passing remarks or for things already remembered."
        ),
        "parameters": {
            "type": "object",
            "properties": {"content": _CONTENT},
            "required": ["content"],
        },
    },
    {
        "name": MEM0_UPDATE,
        "description": "Replace the text of an out-of-date memory (an id from mem0_search).",
        "parameters": {
            "type": "object",
            "properties": {"memory_id": _ID, "content": _CONTENT},
            "required": ["memory_id", "content"],
        },
    },
    {
        "name": MEM0_DELETE,
        "description": "Forget one memory (an id from mem0_search) that is wrong or unwanted.",
        "parameters": {
            "type": "object",
            "properties": {"memory_id": _ID},
            "required": ["memory_id"],
        },
    },
]


def query_arg(args: dict[str, Any]) -> str:
    value = args.get("query")
    if not isinstance(value, str) or not strip_memory_context(value).strip():
        raise ToolError("query must be a non-empty string")
    text = strip_memory_context(value).strip()
    if len(text) > MAX_QUERY:
        raise ToolError(f"query is longer than {MAX_QUERY} characters")
    return text


def limit_arg(args: dict[str, Any], default: int) -> int:
    value = args.get("limit")
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ToolError(f"limit must be an integer from 1 to {MAX_SEARCH_LIMIT}")
    number = int(value)
    if not 1 <= number <= MAX_SEARCH_LIMIT:
        raise ToolError(f"limit must be an integer from 1 to {MAX_SEARCH_LIMIT}")
    return number


def content_arg(args: dict[str, Any]) -> str:
    value = args.get("content")
    if not isinstance(value, str):
        raise ToolError("content must be a string")
    text = strip_memory_context(value).strip()
    if not text:
        raise ToolError("content must not be empty")
    if len(text) > MAX_CONTENT:
        raise ToolError(f"content is longer than {MAX_CONTENT} characters")
    refusal = scan_memory_content(text)
    if refusal is not None:
        raise ToolError(refusal)
    return text


def memory_id_arg(args: dict[str, Any]) -> str:
    value = args.get("memory_id")
    if not isinstance(value, str) or not value.strip():
        raise ToolError("memory_id must be the id of a memory, as mem0_search returned it")
    try:
        return str(uuid.UUID(value.strip()))
    except ValueError:
        raise ToolError(
            "memory_id is not a memory id; use an id that mem0_search returned"
        ) from None

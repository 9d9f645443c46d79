"""The four Supermemory tools: their schemas and the checks of their arguments.

The checks raise :class:`ToolError` with a message the model can act on; the
provider returns it as ``{"success": false, "error": ...}``. A memory id is
held to letters, digits, ``-`` and ``_``, as Supermemory's ids are.
"""

from __future__ import annotations

import re
from typing import Any

from memory.providers import strip_memory_context
from memory.store import scan_memory_content
from plugins.memory._kit import BadToolInput

STORE = "supermemory_store"
SEARCH = "supermemory_search"
FORGET = "supermemory_forget"
PROFILE = "supermemory_profile"
TOOL_NAMES = (STORE, SEARCH, FORGET, PROFILE)
MAX_CONTENT = 4000
MAX_QUERY = 1000
MAX_LIMIT = 20
_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


class ToolError(BadToolInput):
    """Bad tool input; the message goes back to the model."""


SCHEMAS: list[dict[str, Any]] = [
    {
        "name": STORE,
        "description": (
            "Remember one durable fact about the person you are talking to, for later "
            "conversations (Supermemory). Not for passing remarks. Supermemory extracts "
            "memories from it shortly after; their ids come from supermemory_search."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "content": {
                    "type": "string",
                    "description": f"One self-contained fact, at most {MAX_CONTENT} characters.",
                }
            },
            "required": ["content"],
        },
    },
    {
        "name": SEARCH,
        "description": (
            "Search your long-term memory of the person you are talking to (earlier "
            "conversations and stored facts). Returns memories with ids."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                    "description": "How many memories at most.",
                },
            },
            "required": ["query"],
        },
    },
    {
        "name": FORGET,
        "description": (
            "Forget one memory (an id from supermemory_search or supermemory_profile) that "
            "is wrong or unwanted."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "memory_id": {
                    "type": "string",
                    "description": "The id of one of this person's memories.",
                }
            },
            "required": ["memory_id"],
        },
    },
    {
        "name": PROFILE,
        "description": (
            "The profile Supermemory keeps of the person you are talking to: lasting "
            "facts (static) and recent context (dynamic)."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "Optional: also list the memories matching this, with ids.",
                }
            },
        },
    },
]


def _clean(value: Any, what: str, limit: int) -> str:
    if not isinstance(value, str):
        raise ToolError(f"{what} must be a string")
    text = strip_memory_context(value).strip()
    if not text:
        raise ToolError(f"{what} must not be empty")
    if len(text) > limit:
        raise ToolError(f"{what} is longer than {limit} characters")
    return text


def query_arg(args: dict[str, Any], *, optional: bool = False) -> str:
    if optional and args.get("query") in (None, ""):
        return ""
    return _clean(args.get("query"), "query", MAX_QUERY)


def limit_arg(args: dict[str, Any], default: int) -> int:
    value = args.get("limit")
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ToolError(f"limit must be an integer from 1 to {MAX_LIMIT}")
    if not 1 <= int(value) <= MAX_LIMIT:
        raise ToolError(f"limit must be an integer from 1 to {MAX_LIMIT}")
    return int(value)


def content_arg(args: dict[str, Any]) -> str:
    text = _clean(args.get("content"), "content", MAX_CONTENT)
    refusal = scan_memory_content(text)
    if refusal is not None:
        raise ToolError(refusal)
    return text


def memory_id_arg(args: dict[str, Any]) -> str:
    value = args.get("memory_id")
    if not isinstance(value, str) or not _ID.fullmatch(value.strip()):
        raise ToolError("memory_id must be an id that supermemory_search returned")
    return value.strip()

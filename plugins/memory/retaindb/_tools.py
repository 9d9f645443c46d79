"""The six ``retaindb_*`` tools: their schemas and the checks of their arguments."""

from __future__ import annotations

import re
from typing import Any

from memory.providers import strip_memory_context
from memory.store import scan_memory_content
from plugins.errors import PluginError

REMEMBER = "retaindb_remember"
SEARCH = "retaindb_search"
FORGET = "retaindb_forget"
FILE_PUT = "retaindb_file_put"
FILE_GET = "retaindb_file_get"
FILE_LIST = "retaindb_file_list"
TOOL_NAMES = (REMEMBER, SEARCH, FORGET, FILE_PUT, FILE_GET, FILE_LIST)
MAX_CONTENT = 2000
MAX_FILE = 64_000
MAX_QUERY = 1000
MAX_LIMIT = 20
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class ToolError(PluginError, ValueError):
    """Bad tool input; the message goes back to the model."""


_FILE_NAME = {
    "type": "string",
    "description": "A file name: letters, digits, '.', '_' or '-', at most 128 characters.",
}

SCHEMAS: list[dict[str, Any]] = [
    {
        "name": REMEMBER,
        "description": "Remember one durable fact about the person you are talking to.",
        "parameters": {
            "type": "object",
            "properties": {
                "content": {"type": "string", "description": f"At most {MAX_CONTENT} chars."}
            },
            "required": ["content"],
        },
    },
    {
        "name": SEARCH,
        "description": "Search your RetainDB memories of this person; returns ids.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
            },
            "required": ["query"],
        },
    },
    {
        "name": FORGET,
        "description": "Forget one memory by the id retaindb_search gave.",
        "parameters": {
            "type": "object",
            "properties": {"memory_id": {"type": "string"}},
            "required": ["memory_id"],
        },
    },
    {
        "name": FILE_PUT,
        "description": "Save a small text file (notes, a list, a draft) for this person; "
        "an existing file of that name is replaced.",
        "parameters": {
            "type": "object",
            "properties": {"name": _FILE_NAME, "content": {"type": "string"}},
            "required": ["name", "content"],
        },
    },
    {
        "name": FILE_GET,
        "description": "Read one of this person's files.",
        "parameters": {"type": "object", "properties": {"name": _FILE_NAME}, "required": ["name"]},
    },
    {
        "name": FILE_LIST,
        "description": "List this person's files.",
        "parameters": {"type": "object", "properties": {}},
    },
]


def text_arg(args: dict[str, Any], key: str, limit: int, *, scan: bool = True) -> str:
    value = args.get(key)
    text = strip_memory_context(value).strip() if isinstance(value, str) else ""
    if not text:
        raise ToolError(f"{key} must be a non-empty string")
    if len(text) > limit:
        raise ToolError(f"{key} is longer than {limit} characters")
    refusal = scan_memory_content(text) if scan else None
    if refusal is not None:
        raise ToolError(refusal)
    return text


def limit_arg(args: dict[str, Any], default: int) -> int:
    value = args.get("limit", default)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LIMIT:
        raise ToolError(f"limit must be an integer from 1 to {MAX_LIMIT}")
    return value


def name_arg(args: dict[str, Any]) -> str:
    value = args.get("name")
    if not isinstance(value, str) or not _NAME.match(value.strip()):
        raise ToolError("name must be letters, digits, '.', '_' or '-' (at most 128)")
    return value.strip()


def id_arg(args: dict[str, Any]) -> str:
    value = args.get("memory_id")
    if not isinstance(value, str) or not value.strip() or "/" in value:
        raise ToolError("memory_id must be an id that retaindb_search returned")
    return value.strip()

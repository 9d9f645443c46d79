"""The six ``viking_*`` tools: their schemas and the checks of their arguments.

Every URI a tool takes must lie in the person's own space: ``viking://user/<their
OpenViking id>/…`` (as search and list results give it) or ``viking://~/…``,
the server's alias of the requesting user's own space, which is rewritten to
the explicit form. Anything else is refused here, before the server (which
would answer ``PERMISSION_DENIED`` for another user's space). Account-wide
spaces (``viking://resources/``, ``viking://agent/``) are shared by everyone on
the server and stay out of reach.
"""

from __future__ import annotations

from typing import Any

from memory.providers import strip_memory_context
from memory.store import scan_memory_content
from plugins.memory._kit import BadToolInput

VIKING_SEARCH = "viking_search"
VIKING_READ = "viking_read"
VIKING_LIST = "viking_list"
VIKING_REMEMBER = "viking_remember"
VIKING_FORGET = "viking_forget"
VIKING_COMMIT = "viking_commit"
TOOL_NAMES = (
    VIKING_SEARCH,
    VIKING_READ,
    VIKING_LIST,
    VIKING_REMEMBER,
    VIKING_FORGET,
    VIKING_COMMIT,
)
USER_SPACE = "viking://user/"
HOME = "viking://~"
DEFAULT_LIST = "memories"
"""What viking_list lists without a ``uri``: the person's ``viking://~/memories``."""
MAX_LIMIT = 20
MAX_CONTENT = 2000
MAX_QUERY = 1000
MAX_READ = 8000


class ToolError(BadToolInput):
    """Bad tool input; the message goes back to the model."""


_URI = {
    "type": "string",
    "description": "A viking:// URI of this person's own space, as viking_search or "
    "viking_list gave it (viking://~/... also names their own space).",
}

SCHEMAS: list[dict[str, Any]] = [
    {
        "name": VIKING_SEARCH,
        "description": (
            "Semantic search of the OpenViking context of the person you are talking to "
            "(memories extracted from earlier sessions). Returns URIs with short abstracts."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
            },
            "required": ["query"],
        },
    },
    {
        "name": VIKING_READ,
        "description": "Read the full text behind one viking:// URI of this person.",
        "parameters": {"type": "object", "properties": {"uri": _URI}, "required": ["uri"]},
    },
    {
        "name": VIKING_LIST,
        "description": "List the entries under a viking:// directory of this person "
        f"(default {HOME}/{DEFAULT_LIST}).",
        "parameters": {"type": "object", "properties": {"uri": _URI}},
    },
    {
        "name": VIKING_REMEMBER,
        "description": "Store one durable fact about this person in OpenViking now "
        "(committed at once, not at the end of the session).",
        "parameters": {
            "type": "object",
            "properties": {
                "content": {"type": "string", "description": f"At most {MAX_CONTENT} chars."}
            },
            "required": ["content"],
        },
    },
    {
        "name": VIKING_FORGET,
        "description": "Remove one memory (a URI viking_search or viking_list gave) that is "
        "wrong or unwanted.",
        "parameters": {"type": "object", "properties": {"uri": _URI}, "required": ["uri"]},
    },
    {
        "name": VIKING_COMMIT,
        "description": "Commit this session's conversation so far to OpenViking now, so "
        "its memories are extracted before the session ends.",
        "parameters": {"type": "object", "properties": {}},
    },
]


def query_arg(args: dict[str, Any]) -> str:
    value = args.get("query")
    text = strip_memory_context(value).strip() if isinstance(value, str) else ""
    if not text:
        raise ToolError("query must be a non-empty string")
    if len(text) > MAX_QUERY:
        raise ToolError(f"query is longer than {MAX_QUERY} characters")
    return text


def limit_arg(args: dict[str, Any], default: int) -> int:
    value = args.get("limit", default)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LIMIT:
        raise ToolError(f"limit must be an integer from 1 to {MAX_LIMIT}")
    return value


def user_root(user: str) -> str:
    """The root of the OpenViking user ``user``'s own space."""
    return f"{USER_SPACE}{user}"


def uri_arg(args: dict[str, Any], user: str, default: str | None = None) -> str:
    """The ``uri`` argument as an explicit URI of ``user``'s own space.

    ``default`` is a path below that space's root, used when no ``uri`` is given.
    """
    value = args.get("uri", None if default is None else f"{HOME}/{default}")
    if not isinstance(value, str) or not value.strip():
        raise ToolError("uri must be a viking:// URI of this person's own space")
    uri = value.strip().rstrip("/")
    root = user_root(user)
    if uri == HOME or uri.startswith(HOME + "/"):
        uri = root + uri[len(HOME) :]
    elif uri + "/" == USER_SPACE:
        uri = root
    if (uri != root and not uri.startswith(root + "/")) or ".." in uri.split("/"):
        raise ToolError(f"uri must lie in this person's own space ({HOME}/... or {root}/...)")
    return uri


def content_arg(args: dict[str, Any]) -> str:
    value = args.get("content")
    text = strip_memory_context(value).strip() if isinstance(value, str) else ""
    if not text:
        raise ToolError("content must be a non-empty string")
    if len(text) > MAX_CONTENT:
        raise ToolError(f"content is longer than {MAX_CONTENT} characters")
    refusal = scan_memory_content(text)
    if refusal is not None:
        raise ToolError(refusal)
    return text

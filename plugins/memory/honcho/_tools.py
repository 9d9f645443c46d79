"""The five honcho tools: their schemas and the checks of their arguments.

Every tool acts on the person who is talking (the session's user, or the
speaker in a group session); none takes a peer, so none can reach another
person's memory. The checks raise :class:`ToolError` with a message the model
can act on; the provider returns it as ``{"success": false, "error": ...}``.
"""

from __future__ import annotations

import re
from typing import Any

from memory.providers import strip_memory_context
from memory.store import scan_memory_content
from plugins.memory._kit import BadToolInput

from ._client import SessionSnapshot
from ._config import ASSISTANT_PEER, original_name

HONCHO_PROFILE = "honcho_profile"
HONCHO_SEARCH = "honcho_search"
HONCHO_REASONING = "honcho_reasoning"
HONCHO_CONTEXT = "honcho_context"
HONCHO_CONCLUDE = "honcho_conclude"
TOOL_NAMES = (HONCHO_PROFILE, HONCHO_SEARCH, HONCHO_REASONING, HONCHO_CONTEXT, HONCHO_CONCLUDE)
REASONING_LEVELS = ("minimal", "low", "medium", "high", "max")
MAX_QUERY = 2000
CONTEXT_MESSAGES = 10
"""Messages honcho_context shows."""
MAX_SHOWN = 500
"""Characters of one message honcho_context shows."""
MAX_FACT = 500
MAX_CARD = 40
MAX_CONCLUSION = 2000
MAX_SEARCH_LIMIT = 20
DEFAULT_SEARCH_LIMIT = 8
_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
"""What a conclusion id looks like; it goes into a URL path, so nothing else is let through."""


class ToolError(BadToolInput):
    """Bad tool input; the message goes back to the model."""


_QUERY = {"type": "string", "description": "What to look for, in plain words."}

SCHEMAS: list[dict[str, Any]] = [
    {
        "name": HONCHO_PROFILE,
        "description": (
            "Read the peer card of the person you are talking to: Honcho's short list of "
            "key facts about them (name, role, preferences, style). Pass `card` to replace "
            "it with a corrected list; omit it to read."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "card": {
                    "type": "array",
                    "items": {"type": "string", "maxLength": MAX_FACT},
                    "maxItems": MAX_CARD,
                    "description": "The whole new card, one fact per item.",
                }
            },
        },
    },
    {
        "name": HONCHO_SEARCH,
        "description": (
            "Search what Honcho has concluded about the person you are talking to, from "
            "earlier conversations. Returns matching conclusions with ids, no synthesis: "
            "cheap and fast."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": _QUERY,
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_SEARCH_LIMIT,
                    "description": f"At most this many (default {DEFAULT_SEARCH_LIMIT}).",
                },
            },
            "required": ["query"],
        },
    },
    {
        "name": HONCHO_REASONING,
        "description": (
            "Ask Honcho a question about the person you are talking to and get an answer "
            "reasoned from everything it knows of them. Slower and costlier than "
            "honcho_search; use it for patterns, preferences and anything needing synthesis."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "A question in plain words."},
                "reasoning_level": {
                    "type": "string",
                    "enum": list(REASONING_LEVELS),
                    "description": "How hard to think: minimal for a quick fact, "
                    "high or max for deep analysis (default low).",
                },
            },
            "required": ["query"],
        },
    },
    {
        "name": HONCHO_CONTEXT,
        "description": (
            "A snapshot of this conversation as Honcho holds it: its summary, the latest "
            "messages, what Honcho knows of the person and their peer card. `query` "
            "focuses the part about the person."
        ),
        "parameters": {"type": "object", "properties": {"query": _QUERY}},
    },
    {
        "name": HONCHO_CONCLUDE,
        "description": (
            "Record one durable fact about the person you are talking to as a Honcho "
            "conclusion (`conclusion`), or delete one of their conclusions by the id "
            "honcho_search gave (`delete_id`) when it is wrong or they want it gone. "
            "Pass exactly one of the two."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "conclusion": {
                    "type": "string",
                    "description": f"One self-contained fact, at most {MAX_CONCLUSION} characters.",
                },
                "delete_id": {"type": "string", "description": "The id of a conclusion."},
            },
        },
    },
]


def _clean(value: str) -> str:
    return strip_memory_context(value).strip()


def query_arg(args: dict[str, Any], *, required: bool = True) -> str:
    """The query; ``""`` when it is optional and left out (or blank)."""
    value = args.get("query")
    text = _clean(value) if isinstance(value, str) else ""
    if not text:
        if required or (value is not None and not isinstance(value, str)):
            raise ToolError("query must be a non-empty string")
        return ""
    if len(text) > MAX_QUERY:
        raise ToolError(f"query is longer than {MAX_QUERY} characters")
    return text


def limit_arg(args: dict[str, Any]) -> int:
    value = args.get("limit")
    if value is None:
        return DEFAULT_SEARCH_LIMIT
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ToolError(f"limit must be an integer from 1 to {MAX_SEARCH_LIMIT}")
    if not 1 <= int(value) <= MAX_SEARCH_LIMIT:
        raise ToolError(f"limit must be an integer from 1 to {MAX_SEARCH_LIMIT}")
    return int(value)


def level_arg(args: dict[str, Any]) -> str | None:
    value = args.get("reasoning_level")
    if value is None:
        return None
    if value not in REASONING_LEVELS:
        raise ToolError("reasoning_level must be one of " + ", ".join(REASONING_LEVELS))
    return str(value)


def fact_arg(value: Any, what: str, limit: int) -> str:
    """One fact to store: a non-empty string within ``limit``, passing the memory scan."""
    if not isinstance(value, str) or not _clean(value):
        raise ToolError(f"{what} must be a non-empty string")
    text = _clean(value)
    if len(text) > limit:
        raise ToolError(f"{what} is longer than {limit} characters")
    refusal = scan_memory_content(text)
    if refusal is not None:
        raise ToolError(refusal)
    return text


def card_arg(args: dict[str, Any]) -> list[str] | None:
    """The new card, or None to read it."""
    value = args.get("card")
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > MAX_CARD:
        raise ToolError(f"card must be a list of at most {MAX_CARD} facts")
    card = [fact_arg(item, "each card fact", MAX_FACT) for item in value]
    return list(dict.fromkeys(card))


def conclude_args(args: dict[str, Any]) -> tuple[str | None, str | None]:
    """``(conclusion, None)`` to record, ``(None, delete_id)`` to delete."""
    conclusion, delete_id = args.get("conclusion"), args.get("delete_id")
    if (conclusion is None) == (delete_id is None):
        raise ToolError("pass exactly one of conclusion (to record) or delete_id (to delete)")
    if delete_id is not None:
        if not isinstance(delete_id, str) or not _ID.fullmatch(delete_id.strip()):
            raise ToolError("delete_id must be the id of a conclusion, as honcho_search gave it")
        return None, delete_id.strip()
    return fact_arg(conclusion, "conclusion", MAX_CONCLUSION), None


def snapshot_result(snap: SessionSnapshot, peer: str) -> dict[str, Any]:
    """What honcho_context shows of ``peer``'s session: the last messages, by who said them."""

    def who(author: str) -> str:
        if author == peer:
            return "user"
        if author == ASSISTANT_PEER:
            return "assistant"
        try:
            return original_name(author)
        except (ValueError, UnicodeDecodeError):
            return author

    recent = [
        {"from": who(author), "content": text[:MAX_SHOWN]}
        for author, text in snap.messages[-CONTEXT_MESSAGES:]
    ]
    return {
        "summary": snap.summary or None,
        "peer_card": snap.card,
        "representation": snap.representation or None,
        "recent_messages": recent,
    }

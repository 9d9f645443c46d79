"""The three ByteRover tools: their schemas and the checks of their arguments.

An argument is handed to ``brv`` as one argv element (never through a shell),
after ``--``: one that starts with ``-`` is text like any other.
"""

from __future__ import annotations

from typing import Any

from memory.providers import strip_memory_context
from memory.store import scan_memory_content
from plugins.memory._kit import BadToolInput

QUERY = "brv_query"
CURATE = "brv_curate"
STATUS = "brv_status"
TOOL_NAMES = (QUERY, CURATE, STATUS)
MAX_QUERY = 1000
MAX_CONTENT = 4000


class ToolError(BadToolInput):
    """Bad tool input; the message goes back to the model."""


SCHEMAS: list[dict[str, Any]] = [
    {
        "name": QUERY,
        "description": (
            "Ask your ByteRover context tree about the person you are talking to "
            "(what earlier conversations established). Returns brv's answer."
        ),
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "The question."}},
            "required": ["query"],
        },
    },
    {
        "name": CURATE,
        "description": (
            "Add durable knowledge about the person you are talking to to your ByteRover "
            "context tree (brv files it in its hierarchy)."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "content": {
                    "type": "string",
                    "description": f"What to keep, at most {MAX_CONTENT} characters.",
                }
            },
            "required": ["content"],
        },
    },
    {
        "name": STATUS,
        "description": "The state of this person's ByteRover context tree (brv status).",
        "parameters": {"type": "object", "properties": {}},
    },
]


def text_arg(args: dict[str, Any], key: str, limit: int) -> str:
    value = args.get(key)
    if not isinstance(value, str):
        raise ToolError(f"{key} must be a string")
    text = strip_memory_context(value).strip()
    if not text:
        raise ToolError(f"{key} must not be empty")
    if len(text) > limit:
        raise ToolError(f"{key} is longer than {limit} characters")
    return text


def content_arg(args: dict[str, Any]) -> str:
    text = text_arg(args, "content", MAX_CONTENT)
    refusal = scan_memory_content(text)
    if refusal is not None:
        raise ToolError(refusal)
    return text

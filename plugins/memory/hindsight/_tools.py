"""The three Hindsight tools: their schemas and the checks of their arguments.

The checks raise :class:`ToolError` with a message the model can act on; the
provider returns it as ``{"success": false, "error": ...}``. Content to retain
passes the same scan as the built-in memory (no prompt injection, no
exfiltration, no invisible characters), since it is recalled into later prompts.
"""

from __future__ import annotations

from typing import Any

from memory.providers import strip_memory_context
from memory.store import scan_memory_content
from plugins.memory._kit import BadToolInput

from ._config import BUDGETS

RETAIN = "hindsight_retain"
RECALL = "hindsight_recall"
REFLECT = "hindsight_reflect"
TOOL_NAMES = (RETAIN, RECALL, REFLECT)
MAX_CONTENT = 4000
MAX_QUERY = 1000
MAX_CONTEXT = 500
MIN_TOKENS, MAX_TOKENS = 64, 8192


class ToolError(BadToolInput):
    """Bad tool input; the message goes back to the model."""


_QUERY = {"type": "string", "description": "What to look for, in plain words."}
_BUDGET = {
    "type": "string",
    "enum": list(BUDGETS),
    "description": "How hard to search: low is quick, high is thorough.",
}

SCHEMAS: list[dict[str, Any]] = [
    {
        "name": RETAIN,
        "description": (
            "Store something worth remembering about the person you are talking to "
            "(a fact, a preference, a plan) in their long-term memory. Hindsight extracts "
            "the facts itself; the conversation is also remembered when the session ends."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "content": {
                    "type": "string",
                    "description": f"What to remember, at most {MAX_CONTENT} characters.",
                },
                "context": {
                    "type": "string",
                    "description": "Optional: where it comes from (e.g. 'stated by the user').",
                },
            },
            "required": ["content"],
        },
    },
    {
        "name": RECALL,
        "description": (
            "Search the long-term memory of the person you are talking to: facts and "
            "experiences from earlier conversations, with when they happened."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": _QUERY,
                "max_tokens": {
                    "type": "integer",
                    "minimum": MIN_TOKENS,
                    "maximum": MAX_TOKENS,
                    "description": "Most tokens of memories to return.",
                },
                "budget": _BUDGET,
            },
            "required": ["query"],
        },
    },
    {
        "name": REFLECT,
        "description": (
            "Ask Hindsight to think over everything it remembers about the person you are "
            "talking to and answer a question (patterns, a summary, advice grounded in "
            "their history). Slower than hindsight_recall."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "The question to answer."},
                "context": {
                    "type": "string",
                    "description": "Optional: what the question is for.",
                },
                "budget": _BUDGET,
            },
            "required": ["query"],
        },
    },
]


def _text(args: dict[str, Any], key: str, limit: int, *, required: bool) -> str | None:
    value = args.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise ToolError(f"{key} must be a string")
    text = strip_memory_context(value).strip()
    if not text:
        if not required:
            return None
        raise ToolError(f"{key} must not be empty")
    if len(text) > limit:
        raise ToolError(f"{key} is longer than {limit} characters")
    return text


def query_arg(args: dict[str, Any]) -> str:
    text = _text(args, "query", MAX_QUERY, required=True)
    assert text is not None
    return text


def context_arg(args: dict[str, Any]) -> str | None:
    return _text(args, "context", MAX_CONTEXT, required=False)


def content_arg(args: dict[str, Any]) -> str:
    text = _text(args, "content", MAX_CONTENT, required=True)
    assert text is not None
    refusal = scan_memory_content(text)
    if refusal is not None:
        raise ToolError(refusal)
    return text


def budget_arg(args: dict[str, Any], default: str) -> str:
    value = args.get("budget")
    if value is None:
        return default
    if value not in BUDGETS:
        raise ToolError("budget must be one of " + ", ".join(BUDGETS))
    return str(value)


def max_tokens_arg(args: dict[str, Any], default: int) -> int:
    value = args.get("max_tokens")
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ToolError(f"max_tokens must be an integer from {MIN_TOKENS} to {MAX_TOKENS}")
    number = int(value)
    if not MIN_TOKENS <= number <= MAX_TOKENS:
        raise ToolError(f"max_tokens must be an integer from {MIN_TOKENS} to {MAX_TOKENS}")
    return number

"""What one LLM call answered: its text, tool calls and token usage, built from streamed chunks."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agent.messages import AssistantMessage

__all__ = ["LLMResponse", "ToolCallRequest", "Usage", "add_call", "parse_arguments", "usage_of"]


@dataclass
class Usage:
    """Tokens of one or more calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cached_tokens + other.cached_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )


@dataclass(frozen=True)
class ToolCallRequest:
    """One function call the model asked for; ``arguments`` is raw JSON text."""

    id: str
    name: str
    arguments: str


@dataclass
class LLMResponse:
    content: str
    tool_calls: list[ToolCallRequest] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    usage_estimated: bool = False
    """The endpoint reported no usage: ``usage`` is an estimate from the texts."""
    model: str | None = None
    """The model that answered (a fallback's, when the call failed over)."""

    def to_message(self) -> AssistantMessage:
        """The assistant message to append to history."""
        message: AssistantMessage = {"role": "assistant", "content": self.content or None}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in self.tool_calls
            ]
        return message


def add_call(calls: dict[int, dict[str, str]], tc: dict[str, Any]) -> None:
    """Fold one streamed tool-call fragment into the call it belongs to."""
    slot = calls.setdefault(int(tc.get("index") or 0), {"id": "", "name": "", "arguments": ""})
    function = tc.get("function") or {}
    if tc.get("id"):
        slot["id"] = tc["id"]
    if function.get("name"):
        slot["name"] += function["name"]
    if function.get("arguments"):
        slot["arguments"] += function["arguments"]


def _count(section: Any, key: str) -> int:
    value = section.get(key) if isinstance(section, dict) else None
    return value if isinstance(value, int) else 0


def usage_of(usage: dict[str, Any]) -> Usage:
    return Usage(
        prompt_tokens=_count(usage, "prompt_tokens"),
        completion_tokens=_count(usage, "completion_tokens"),
        cached_tokens=_count(usage.get("prompt_tokens_details"), "cached_tokens"),
        reasoning_tokens=_count(usage.get("completion_tokens_details"), "reasoning_tokens"),
    )


def parse_arguments(raw: str) -> dict[str, Any]:
    """Tool-call arguments as a dict; raises ValueError with a model-readable reason."""
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError as exc:
        raise ValueError(f"arguments are not valid JSON: {exc.msg} at position {exc.pos}") from None
    if not isinstance(value, dict):
        raise ValueError("arguments must be a JSON object")
    return value

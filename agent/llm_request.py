"""The body of a streamed chat completion request, as the ``openai`` client is given it.

The client walks each message and tool of a request in Python to transform it (its
aliases and formats): some 20 ms on the event loop for a history of 20 messages. Chat
messages and tool schemas have nothing to transform, so they go in ``extra_body``,
which the client sends as it is (it replaces the empty ``messages``); the endpoint
gets the same JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent.messages import ChatMessage
from agent.tracing import steps

__all__ = ["chat_request"]


def chat_request(
    model: str, messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]] | None
) -> dict[str, Any]:
    """The arguments of ``chat.completions.create`` for a streamed answer with usage."""
    body: dict[str, Any] = {"messages": list(messages)}
    if tools:
        body["tools"] = list(tools)
    request = {
        "model": model,
        "messages": [],
        "stream": True,
        "stream_options": {"include_usage": True},
        "extra_body": body,
    }
    steps.step("request built")
    return request

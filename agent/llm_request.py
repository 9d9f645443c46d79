"""The body of a streamed chat completion request, as the bytes the endpoint is sent.

The ``openai`` client's ``chat.completions.create`` walks each argument of a request
in Python to transform it (its aliases and formats) and encodes the result: some
20 ms on the event loop for a history of 20 messages when the messages go through
it, and still 0.3 ms for a request whose messages it is not given. Chat messages and
tool schemas have nothing to transform, so the body is encoded here, once, the way
the client encodes JSON (UTF-8, no spaces, no NaN), and posted with the client's
``post`` (its auth, headers, timeouts and errors); the endpoint gets the same JSON.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agent.messages import ChatMessage
from agent.tracing import steps

__all__ = ["CHAT_PATH", "chat_request"]

CHAT_PATH = "/chat/completions"
"""Where a chat completion is asked for, below the endpoint's base URL."""


def chat_request(
    model: str, messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]] | None
) -> bytes:
    """The JSON body of a streamed chat completion with usage."""
    body: dict[str, Any] = {
        "model": model,
        "messages": list(messages),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if tools:
        body["tools"] = list(tools)
    encoded = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    steps.step("request built")
    return encoded.encode()

"""The chunks of a streamed chat completion, read as plain JSON from its event stream.

The ``openai`` client makes the request (auth, errors, timeouts); the events are
read here from the response's lines (server-sent events: ``data:`` lines, a
blank line ends an event, ``[DONE]`` ends the stream). Each chunk is a dict as
the endpoint sent it: building a typed model per chunk cost about 40 times the
JSON parse, for a few fields read once. An event carrying ``error`` raises what
``error(body)`` makes of it (``agent.llm``: ``openai.APIError``, as the client's own
stream does).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from agent.tracing import steps

__all__ = ["error_message", "stream_chunks"]

ErrorFactory = Callable[[Any], Exception]


def error_message(error: Any) -> str:
    """The message of an ``error`` object in a stream, or a generic one."""
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) and message else "An error occurred during streaming"


async def stream_chunks(
    lines: AsyncIterator[str], error: ErrorFactory
) -> AsyncIterator[dict[str, Any]]:
    """Every JSON chunk of the event stream ``lines``, until ``[DONE]`` or its end."""
    data: list[str] = []
    first = True
    async for line in lines:
        if first:
            steps.step("first byte")  # of the answer (the per-step trace)
            first = False
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
            continue
        if line or not data:
            continue  # event:, id:, retry:, comments; or a blank line with no data
        payload, data = "\n".join(data), []
        if payload.startswith("[DONE]"):
            return
        chunk = json.loads(payload)
        if isinstance(chunk, dict):
            if chunk.get("error"):
                raise error(chunk["error"])
            yield chunk
    if data and not data[0].startswith("[DONE]"):
        chunk = json.loads("\n".join(data))
        if isinstance(chunk, dict):
            if chunk.get("error"):
                raise error(chunk["error"])
            yield chunk

"""What an answer shows while it streams: recalled memory context never comes out.

The model sees recalled text fenced in ``<memory-context>``; should it echo a
block back, ``scrubbed`` keeps it out of the streamed pieces (a tag split
across pieces included) and the agent strips it from the final text.
"""

from __future__ import annotations

import inspect

from agent.llm import DeltaCallback
from memory.providers import ContextScrubber

__all__ = ["ContextScrubber", "emit", "scrubbed"]


def scrubbed(on_delta: DeltaCallback, scrubber: ContextScrubber) -> DeltaCallback:
    """``on_delta`` behind ``scrubber``."""

    async def shown(piece: str) -> None:
        await emit(on_delta, scrubber.feed(piece))

    return shown


async def emit(on_delta: DeltaCallback, text: str) -> None:
    """Hand ``text`` to ``on_delta`` (sync or async) unless it is empty."""
    if text:
        result = on_delta(text)
        if inspect.isawaitable(result):
            await result

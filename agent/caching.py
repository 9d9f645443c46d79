"""Anthropic-style prompt caching markers, the seed's ``system_and_3`` strategy.

Four ``cache_control`` breakpoints: the system prompt, and the last three
non-system messages (a rolling window). Applied to a copy of the request, never
to the stored history.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Literal

from agent.messages import CacheControl, ChatMessage

MAX_BREAKPOINTS = 4


def caching_enabled(setting: Literal["auto", "on", "off"], model: str) -> bool:
    """``auto`` turns caching on for model names that contain claude or anthropic."""
    if setting == "on":
        return True
    if setting == "off":
        return False
    lowered = model.lower()
    return "claude" in lowered or "anthropic" in lowered


def apply_cache_control(
    messages: Sequence[ChatMessage], ttl: Literal["5m", "1h"] = "5m"
) -> list[ChatMessage]:
    """A deep copy of ``messages`` with system_and_3 breakpoints."""
    marker: CacheControl = {"type": "ephemeral"}
    if ttl == "1h":
        marker["ttl"] = "1h"
    result = copy.deepcopy(list(messages))
    used = 0
    if result and result[0].get("role") == "system":
        _mark(result[0], marker)
        used = 1
    non_system = [i for i, msg in enumerate(result) if msg.get("role") != "system"]
    for index in non_system[-(MAX_BREAKPOINTS - used) :]:
        _mark(result[index], marker)
    return result


def _mark(message: ChatMessage, marker: CacheControl) -> None:
    content = message.get("content")
    if isinstance(content, str) and content:
        message["content"] = [{"type": "text", "text": content, "cache_control": marker.copy()}]
    elif isinstance(content, list) and content:
        content[-1]["cache_control"] = marker.copy()  # a part of the copy, not of the history
    else:  # e.g. an assistant message that only carries tool calls
        message["cache_control"] = marker.copy()


def without_cache_control(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """A copy of ``messages`` without the breakpoints (for a model that does not cache)."""
    result = copy.deepcopy(list(messages))
    for message in result:
        message.pop("cache_control", None)
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                part.pop("cache_control", None)
    return result

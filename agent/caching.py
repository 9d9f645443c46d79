"""Anthropic-style prompt caching markers, the seed's ``system_and_3`` strategy.

Four ``cache_control`` breakpoints: the system prompt, and the last three
non-system messages (a rolling window). Applied to a copy of the request, never
to the stored history.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, Literal

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
    messages: Sequence[dict[str, Any]], ttl: Literal["5m", "1h"] = "5m"
) -> list[dict[str, Any]]:
    """A deep copy of ``messages`` with system_and_3 breakpoints."""
    marker: dict[str, str] = {"type": "ephemeral"}
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


def _mark(message: dict[str, Any], marker: dict[str, str]) -> None:
    content = message.get("content")
    if isinstance(content, str) and content:
        message["content"] = [{"type": "text", "text": content, "cache_control": dict(marker)}]
    elif isinstance(content, list) and content:
        content[-1] = {**content[-1], "cache_control": dict(marker)}
    else:  # e.g. an assistant message that only carries tool calls
        message["cache_control"] = dict(marker)

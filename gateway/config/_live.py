"""The settings in effect now: one holder that ``/admin reload`` updates and every part reads.

Parts that must follow a reload read ``live.current`` when they act, never a
copy taken at start-up. Sections that cannot change while the process runs
(platform tokens, the LLM endpoint, Redis, the HTTP address) are kept from
start-up by ``replace`` and reported, so a reload never half-applies them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from gateway.config._loader import Settings

logger = logging.getLogger(__name__)

RESTART_ONLY_SECTIONS = ("llm", "redis")
"""Whole sections a running process keeps from start-up."""

RESTART_ONLY_KEYS = (
    ("memory", "provider"),
    ("sessions", "scope"),
    ("sessions", "threads"),
    ("sessions", "max_concurrent_turns"),
    ("gateway", "http"),
)
"""Single keys a running process keeps from start-up (platform sections are kept too)."""

Listener = Callable[[Settings], None]


class LiveSettings:
    """Holds the current ``Settings``; ``replace`` applies a reload and tells the listeners."""

    def __init__(self, settings: Settings, *, keep: tuple[str, ...] = ()) -> None:
        self._current = settings
        self._keep = (*RESTART_ONLY_SECTIONS, *keep)
        self._listeners: list[Listener] = []

    @property
    def current(self) -> Settings:
        return self._current

    def subscribe(self, listener: Listener) -> None:
        """Call ``listener(settings)`` after every reload."""
        self._listeners.append(listener)

    def replace(self, fresh: Settings) -> list[str]:
        """Take ``fresh`` except what needs a restart; returns the restart-only keys that differ."""
        old = self._current
        kept: dict[str, object] = {}
        pending: list[str] = []
        for section in self._keep:
            if getattr(fresh, section) != getattr(old, section):
                pending.append(section)
            kept[section] = getattr(old, section)
        merged = fresh.model_copy(update=kept)
        for section, key in RESTART_ONLY_KEYS:
            old_value = getattr(getattr(old, section), key)
            if getattr(getattr(merged, section), key) != old_value:
                pending.append(f"{section}.{key}")
                part = getattr(merged, section).model_copy(update={key: old_value})
                merged = merged.model_copy(update={section: part})
        self._current = merged
        for listener in self._listeners:
            try:
                listener(merged)
            except Exception:
                logger.exception("applying reloaded settings failed in %r", listener)
        return pending

"""The settings in effect now: one holder that ``/admin reload`` updates and every part reads.

Parts that must follow a reload read ``live.current`` when they act, never a
copy taken at start-up. Sections that cannot change while the process runs
(platform tokens, the LLM endpoint, Redis, the HTTP address) are kept from
start-up by ``replace`` and reported, so a reload never half-applies them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from gateway.adapters import PLATFORMS
from gateway.config._loader import CONFIG_FILE_NAME, SECRETS_FILE_NAME, Settings
from gateway.errors import GatewayError

logger = logging.getLogger(__name__)

RESTART_ONLY_SECTIONS = ("llm", "redis", "database", *(spec.name for spec in PLATFORMS))
"""Whole sections a running process keeps from start-up (every platform's among them)."""

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

    def __init__(self, settings: Settings) -> None:
        self._current = settings
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
        for section in RESTART_ONLY_SECTIONS:
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


class ConfigWatcher:
    """Applies edits of ``config.yaml`` and ``.env`` to ``live`` when ``check()`` finds them.

    For processes that no ``/admin reload`` reaches (``chorus worker``): the job
    functions call ``check()`` before each job, which costs two ``stat`` calls. A
    file that cannot be read or validated is reported and the settings stay.
    """

    def __init__(self, live: LiveSettings, load: Callable[[], Settings]) -> None:
        self._live = live
        self._load = load
        home = live.current.home
        self._files = (home / CONFIG_FILE_NAME, home / SECRETS_FILE_NAME)
        self._stamp = self._read_stamp()

    def _read_stamp(self) -> tuple[tuple[int, int] | None, ...]:
        stamps: list[tuple[int, int] | None] = []
        for path in self._files:
            try:
                stat = path.stat()
            except OSError:
                stamps.append(None)
            else:
                stamps.append((stat.st_mtime_ns, stat.st_size))
        return tuple(stamps)

    def check(self) -> bool:
        """Reload when a file changed; True when new settings were applied."""
        stamp = self._read_stamp()
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        try:
            fresh = self._load()
        except GatewayError as exc:
            logger.error(
                "the configuration changed but cannot be used; it stays as it was: %s", exc
            )
            return False
        pending = self._live.replace(fresh)
        logger.info("configuration reloaded; restart needed for: %s", ", ".join(pending) or "-")
        return True

"""The settings in effect now: one holder that ``/admin reload`` updates and every part reads.

Parts that must follow a reload read ``live.current`` when they act, never a
copy taken at start-up. Settings that cannot change while the process runs
(platform tokens, the LLM endpoint, Redis, the HTTP address, …) declare
``RESTART`` where they are declared; ``replace`` keeps them from start-up and
reports them, so a reload never half-applies them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel

from gateway.config._loader import CONFIG_FILE_NAME, SECRETS_FILE_NAME, Settings
from gateway.errors import GatewayError
from memory.settings import declared_effects

logger = logging.getLogger(__name__)

SETTING_EFFECTS = {
    path: effect.when for path, effect in declared_effects(Settings).items() if path != ("home",)
}
"""Every settings key by path (``("gateway", "http", "port")``) and when a change takes effect,
as each section declares it (``LIVE``, ``NEW_SESSIONS`` or ``RESTART`` from ``memory.settings``)."""

RESTART_ONLY_KEYS = tuple(path for path, when in SETTING_EFFECTS.items() if when == "restart")
"""Keys a running process keeps from start-up: a reload names them and leaves them as they were."""

Listener = Callable[[Settings], None]
_M = TypeVar("_M", bound=BaseModel)


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
        merged = fresh
        pending: list[str] = []
        for path in RESTART_ONLY_KEYS:
            old_value = _value_at(old, path)
            if _value_at(fresh, path) != old_value:
                pending.append(".".join(path))
                merged = _with_value(merged, path, old_value)
        self._current = merged
        for listener in self._listeners:
            try:
                listener(merged)
            except Exception:
                logger.exception("applying reloaded settings failed in %r", listener)
        return pending


def _value_at(model: BaseModel, path: tuple[str, ...]) -> object:
    value: object = model
    for name in path:
        value = getattr(value, name)
    return value


def _with_value(model: _M, path: tuple[str, ...], value: object) -> _M:
    """A copy of ``model`` with the setting at ``path`` set to ``value`` (sections copied too)."""
    name, rest = path[0], path[1:]
    if rest:
        value = _with_value(getattr(model, name), rest, value)
    return model.model_copy(update={name: value})


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

"""Which Honcho calls a turn makes, under the cost throttles of :mod:`._config`.

One :class:`Throttle` per provider instance. The ``"primary"`` instance counts
turns by ``on_turn_start`` (a ``prefetch`` without it counts as the next turn)
and keeps the last context it fetched, injected again on the turns
``context_cadence`` skips. The ``"background"`` instance counts its warm-ups.
"""

from __future__ import annotations

import threading

from ._config import Settings


class Throttle:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._lock = threading.Lock()
        self._turn = 0
        self._told = False
        self._context: tuple[int, str] | None = None
        self._dialectic: int | None = None
        self._warmed = 0

    def turn_started(self, turn: int) -> None:
        with self._lock:
            self._turn, self._told = turn, True

    def next_turn(self) -> int | None:
        """The turn a recall is for, or None when nothing is injected on it."""
        with self._lock:
            if not self._told:
                self._turn += 1
            self._told = False
            turn = self._turn
        if self._settings.injection_frequency == "first-turn" and turn > 1:
            return None
        return turn

    def cached_context(self, turn: int) -> str | None:
        """The last context, when ``context_cadence`` says not to ask on ``turn``."""
        with self._lock:
            last = self._context
        if last is not None and turn - last[0] < self._settings.context_cadence:
            return last[1]
        return None

    def fetched_context(self, turn: int, text: str) -> None:
        with self._lock:
            self._context = (turn, text)

    def dialectic_due(self, turn: int) -> bool:
        """Whether ``turn`` asks the dialectic question (and counts as having asked)."""
        with self._lock:
            asked = self._dialectic
            if asked is not None and turn - asked < self._settings.dialectic_cadence:
                return False
            self._dialectic = turn
            return True

    def warm_due(self) -> bool:
        """Whether this warm-up after a turn asks for the context."""
        if self._settings.injection_frequency == "first-turn":
            return False
        with self._lock:
            self._warmed += 1
            return (self._warmed - 1) % self._settings.context_cadence == 0

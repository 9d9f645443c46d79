"""Spend counters: what each person spent (settled) and holds (calls in flight) per period.

``LocalSpend`` keeps them in this process (one gateway, the embedded default);
``gateway.replicas.SharedSpend`` keeps them in Redis when ``redis.url`` is set,
so every replica and worker counts against the same numbers. Both start a
period's counters from the ledger (``Base``) the first time they meet it, and
both check and hold in one step: a call is admitted only while what was spent
and what is held stays under the limit, so concurrent calls overspend by one
call at most.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from gateway.budgets._periods import Window

__all__ = ["Base", "Limits", "LocalSpend", "SpendCounters", "Spent"]


@dataclass(frozen=True)
class Limits:
    """The limits a call is checked against (None: none of that kind)."""

    tokens_per_day: int | None
    cost_per_month: float | None


@dataclass
class Spent:
    """One person's numbers in one period."""

    tokens: float = 0.0
    cost: float = 0.0
    held_tokens: float = 0.0
    held_cost: float = 0.0

    @property
    def all_tokens(self) -> float:
        return self.tokens + self.held_tokens

    @property
    def all_cost(self) -> float:
        return self.cost + self.held_cost


Base = Callable[[str, Window], tuple[int, float]]
"""A person's tokens and cost in a period, from the ledger (a counter's starting point)."""


def over(day: Spent, month: Spent, limits: Limits) -> str | None:
    """Which limit is reached: ``"day"``, ``"month"`` or None."""
    if limits.tokens_per_day is not None and day.all_tokens >= limits.tokens_per_day:
        return "day"
    if limits.cost_per_month is not None and month.all_cost >= limits.cost_per_month:
        return "month"
    return None


class SpendCounters(Protocol):
    async def hold(
        self,
        person: str,
        day: Window,
        month: Window,
        tokens: int,
        cost: float,
        limits: Limits | None,
    ) -> str | None:
        """Hold ``tokens`` and ``cost`` unless ``limits`` is reached: then hold nothing and
        return which (``"day"``/``"month"``). ``limits`` None: never refused."""
        ...

    async def settle(
        self,
        person: str,
        day: Window,
        month: Window,
        held: tuple[float, float],
        used: tuple[float, float],
    ) -> None:
        """Drop a hold of (tokens, cost) and count what the call used instead."""
        ...

    async def read(self, person: str, day: Window, month: Window) -> tuple[Spent, Spent]: ...


class LocalSpend:
    """The counters of one process, shared by its event loop and its job threads (one
    lock; a period's counter is read from the ledger once, the first time it is met)."""

    def __init__(self, base: Base) -> None:
        self._base = base
        self._spent: dict[tuple[str, str], Spent] = {}
        self._ends: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()

    def _get(self, person: str, window: Window) -> Spent:
        key = (person, window.key)
        found = self._spent.get(key)
        if found is None:
            tokens, cost = self._base(person, window)
            found = self._spent[key] = Spent(tokens, cost)
            self._ends[key] = window.end
        return found

    async def hold(
        self,
        person: str,
        day: Window,
        month: Window,
        tokens: int,
        cost: float,
        limits: Limits | None,
    ) -> str | None:
        with self._lock:
            d, m = self._get(person, day), self._get(person, month)
            reached = None if limits is None else over(d, m, limits)
            if reached is not None:
                return reached
            for spent in (d, m):
                spent.held_tokens += tokens
                spent.held_cost += cost
            return None

    async def settle(
        self,
        person: str,
        day: Window,
        month: Window,
        held: tuple[float, float],
        used: tuple[float, float],
    ) -> None:
        with self._lock:
            for spent in (self._get(person, day), self._get(person, month)):
                spent.held_tokens = max(0.0, spent.held_tokens - held[0])
                spent.held_cost = max(0.0, spent.held_cost - held[1])
                spent.tokens += used[0]
                spent.cost += used[1]

    async def read(self, person: str, day: Window, month: Window) -> tuple[Spent, Spent]:
        with self._lock:
            d, m = self._get(person, day), self._get(person, month)
            return Spent(d.tokens, d.cost, d.held_tokens, d.held_cost), Spent(
                m.tokens, m.cost, m.held_tokens, m.held_cost
            )

    def forget(self, now: float) -> None:
        """Drop the counters of periods that have ended (nothing is held in them any more
        but calls that outlived their period, which settle into a fresh counter)."""
        with self._lock:
            for key in [k for k, end in self._ends.items() if end <= now]:
                self._spent.pop(key, None)
                del self._ends[key]

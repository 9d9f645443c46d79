"""``RedisSpend``: the ``SpendCounters`` of the budgets over ``gateway.replicas.SharedSpend``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from gateway.budgets._periods import Window
from gateway.budgets._spend import Base, Limits, Spent
from gateway.replicas import SharedSpend

__all__ = ["RedisSpend"]


class RedisSpend:
    def __init__(self, shared: SharedSpend, base: Base) -> None:
        self.shared = shared
        self._base = base

    def _bases(
        self, person: str, day: Window, month: Window
    ) -> Callable[[], Awaitable[list[tuple[float, float]]]]:
        async def bases() -> list[tuple[float, float]]:
            found: list[tuple[float, float]] = []
            for window in (day, month):
                tokens, cost = await asyncio.to_thread(self._base, person, window)
                found.append((float(tokens), cost))
            return found

        return bases

    async def hold(
        self,
        person: str,
        day: Window,
        month: Window,
        tokens: int,
        cost: float,
        limits: Limits | None,
    ) -> str | None:
        return await self.shared.hold(
            person,
            ((day.key, day.end), (month.key, month.end)),
            (float(tokens), cost),
            None if limits is None else (limits.tokens_per_day, limits.cost_per_month),
            self._bases(person, day, month),
        )

    async def settle(
        self,
        person: str,
        day: Window,
        month: Window,
        held: tuple[float, float],
        used: tuple[float, float],
    ) -> None:
        await self.shared.settle(person, ((day.key, day.end), (month.key, month.end)), held, used)

    async def read(self, person: str, day: Window, month: Window) -> tuple[Spent, Spent]:
        d, m = await self.shared.read(
            person, ((day.key, day.end), (month.key, month.end)), self._bases(person, day, month)
        )
        return Spent(*d), Spent(*m)

    async def aclose(self) -> None:
        await self.shared.aclose()

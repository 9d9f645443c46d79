"""``RedisSpend``: the ``SpendCounters`` of the budgets over ``gateway.replicas.SharedSpend``.

Redis must never delay an answer: each round trip may take ``REDIS_WAIT``
seconds at most; one that takes longer or fails (Redis hung, down, refusing)
makes the counters unavailable for ``PAUSE_AFTER_FAILURE`` seconds, during
which every call fails at once (the meter then lets LLM calls go unchecked and
says so in the log) instead of waiting for Redis again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from gateway.budgets._periods import Window
from gateway.budgets._spend import Base, Limits, Spent
from gateway.errors import GatewayError
from gateway.replicas import ReplicaError, SharedSpend

__all__ = ["BudgetsUnavailable", "RedisSpend"]

T = TypeVar("T")

REDIS_WAIT = 1.0
"""Seconds one round trip to Redis may take before the counters count as unavailable."""
PAUSE_AFTER_FAILURE = 30.0
"""Seconds the counters are not asked again after Redis failed or did not answer."""


class BudgetsUnavailable(GatewayError):
    """The budgets' counters in Redis cannot be used now (the call goes ahead unchecked)."""


class RedisSpend:
    def __init__(
        self, shared: SharedSpend, base: Base, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.shared = shared
        self._base = base
        self._clock = clock
        self._paused_until = 0.0

    async def _call(self, step: Awaitable[T]) -> T:
        if self._clock() < self._paused_until:
            if asyncio.iscoroutine(step):
                step.close()
            raise BudgetsUnavailable("Redis did not answer lately; not asked again yet")
        try:
            async with asyncio.timeout(REDIS_WAIT):
                return await step
        except (TimeoutError, ReplicaError) as exc:
            self._paused_until = self._clock() + PAUSE_AFTER_FAILURE
            reason = "no answer in time" if isinstance(exc, TimeoutError) else str(exc)
            raise BudgetsUnavailable(f"Redis cannot keep the budgets: {reason}") from exc

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
        return await self._call(
            self.shared.hold(
                person,
                ((day.key, day.end), (month.key, month.end)),
                (float(tokens), cost),
                None if limits is None else (limits.tokens_per_day, limits.cost_per_month),
                self._bases(person, day, month),
            )
        )

    async def settle(
        self,
        person: str,
        day: Window,
        month: Window,
        held: tuple[float, float],
        used: tuple[float, float],
    ) -> None:
        periods = ((day.key, day.end), (month.key, month.end))
        await self._call(self.shared.settle(person, periods, held, used))

    async def read(self, person: str, day: Window, month: Window) -> tuple[Spent, Spent]:
        periods = ((day.key, day.end), (month.key, month.end))
        d, m = await self._call(self.shared.read(person, periods, self._bases(person, day, month)))
        return Spent(*d), Spent(*m)

    async def aclose(self) -> None:
        await self.shared.aclose()

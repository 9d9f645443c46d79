"""``RedisSpend``: the ``SpendCounters`` of the budgets over ``gateway.replicas.SharedSpend``.

Redis must never delay an answer: each round trip may take ``REDIS_WAIT``
seconds at most; one that takes longer or fails (Redis hung, down, refusing)
makes the counters unavailable for ``PAUSE_AFTER_FAILURE`` seconds, during
which every call fails at once (the meter then lets LLM calls go unchecked and
says so in the log) instead of waiting for Redis again.

A settle is not a round trip of its own: it waits (``SETTLE_WITHIN`` seconds at
most) for the next hold or read of these counters, which applies it in the same
script (the settle of a turn's call rides on the next turn's check, or on another
person's hold), and is sent alone only when nothing else goes to Redis in that
time, at ``aclose()``, or just before the same person's next hold. Until then
the other replicas count the call's hold in its place, as while it was being
made. ``defer_settles=False`` sends each one at once (a job thread's meter,
whose event loop idles between jobs).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from gateway.budgets._periods import Window
from gateway.budgets._spend import Base, Limits, Spent
from gateway.errors import GatewayError
from gateway.replicas import ReplicaError, SharedSpend, SpendSettle

__all__ = ["BudgetsUnavailable", "RedisSpend"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

REDIS_WAIT = 1.0
"""Seconds one round trip to Redis may take before the counters count as unavailable."""
PAUSE_AFTER_FAILURE = 30.0
"""Seconds the counters are not asked again after Redis failed or did not answer."""
SETTLE_WITHIN = 0.05
"""Seconds a settle waits for a hold or read to carry it before it is sent alone."""

Step = Callable[[Sequence[SpendSettle]], Awaitable[T]]
"""One round trip, given the settles it carries."""


class BudgetsUnavailable(GatewayError):
    """The budgets' counters in Redis cannot be used now (the call goes ahead unchecked)."""


class RedisSpend:
    def __init__(
        self,
        shared: SharedSpend,
        base: Base,
        *,
        clock: Callable[[], float] = time.monotonic,
        defer_settles: bool = True,
    ) -> None:
        self.shared = shared
        self._base = base
        self._clock = clock
        self._paused_until = 0.0
        self._defer = defer_settles
        self._pending: list[SpendSettle] = []
        self._sender: asyncio.Task[None] | None = None
        self._trips: set[asyncio.Future[Any]] = set()
        """Round trips carrying settles, under way (``aclose`` waits for them)."""

    def _paused(self) -> None:
        if self._clock() < self._paused_until:
            raise BudgetsUnavailable("Redis did not answer lately; not asked again yet")

    async def _call(self, step: Step[T]) -> T:
        """Run ``step`` with the settles not sent yet. A round trip that carries settles
        is finished even when its caller is cancelled: they are sent once, or lost with
        a failing Redis (then logged), never half applied by this side."""
        self._paused()
        carried, self._pending = self._pending, []
        try:
            async with asyncio.timeout(REDIS_WAIT):
                if not carried:
                    return await step(())
                trip = asyncio.ensure_future(step(carried))
                self._trips.add(trip)
                trip.add_done_callback(self._done)
                return await asyncio.shield(trip)
        except (TimeoutError, ReplicaError) as exc:
            self._paused_until = self._clock() + PAUSE_AFTER_FAILURE
            reason = "no answer in time" if isinstance(exc, TimeoutError) else str(exc)
            if carried:
                logger.warning("%d budget settle(s) may be lost (%s)", len(carried), reason)
            raise BudgetsUnavailable(f"Redis cannot keep the budgets: {reason}") from exc

    def _done(self, trip: asyncio.Future[Any]) -> None:
        """Fetch a carrying round trip's failure whose caller stopped waiting (no warning
        that it was never retrieved; ``_call`` logged it if its caller was still there)."""
        self._trips.discard(trip)
        if not trip.cancelled():
            trip.exception()

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
        periods = ((day.key, day.end), (month.key, month.end))
        enforced = None if limits is None else (limits.tokens_per_day, limits.cost_per_month)
        bases = self._bases(person, day, month)
        if any(one.person == person for one in self._pending):
            # the person's last call ends, for every replica, before the next is held (as
            # without carrying): a replica never lets go and holds again in one step, which
            # would keep the last of a budget from another replica spending it too
            await self._send_pending()
        return await self._call(
            lambda carried: self.shared.hold(
                person, periods, (float(tokens), cost), enforced, bases, carried
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
        one = SpendSettle(person, ((day.key, day.end), (month.key, month.end)), held, used)
        if not self._defer:
            await self._call(lambda carried: self.shared.settle([*carried, one]))
            return
        self._paused()
        self._pending.append(one)
        if self._sender is None or self._sender.done():
            self._sender = asyncio.create_task(self._send_later(), name="budget-settles")

    async def _send_later(self) -> None:
        await asyncio.sleep(SETTLE_WITHIN)
        await self._send_pending()

    async def _send_pending(self) -> None:
        if not self._pending:
            return
        with contextlib.suppress(BudgetsUnavailable):  # logged by _call; the holds stay
            await self._call(self.shared.settle)

    async def read(self, person: str, day: Window, month: Window) -> tuple[Spent, Spent]:
        periods = ((day.key, day.end), (month.key, month.end))
        bases = self._bases(person, day, month)
        d, m = await self._call(lambda carried: self.shared.read(person, periods, bases, carried))
        return Spent(*d), Spent(*m)

    async def aclose(self) -> None:
        """Send the settles not sent yet, then let go of the client."""
        if self._sender is not None:
            self._sender.cancel()
            await asyncio.gather(self._sender, return_exceptions=True)
        await self._send_pending()
        await asyncio.gather(*self._trips, return_exceptions=True)
        await self.shared.aclose()

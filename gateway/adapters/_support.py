"""Helpers every platform adapter needs, written once.

- ``ChatLanes``: work in order within a chat, concurrently across chats.
- ``Backoff`` and ``retrying``: waits that grow, on the clock the adapter was given.
- ``SeenSet``: a bounded memory of ids (retried events, replayed messages).
- ``RecentValues``: a bounded, expiring memory of looked-up values (names, memberships).
- ``Sometimes``: at most one log line per interval, however often something happens.
- ``secret_value`` / ``has_secret``: a token from the settings, or a clear error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from pydantic import SecretStr

from gateway.clock import Clock, SystemClock

logger = logging.getLogger(__name__)

T = TypeVar("T")
V = TypeVar("V")

MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""Largest image an adapter downloads for the model (``llm.vision``)."""

Work = Callable[[], Awaitable[None]]


def secret_value(value: SecretStr | None, name: str) -> str:
    """The secret's text; ``ValueError`` naming the setting (``name``) when it is unset."""
    text = value.get_secret_value() if value is not None else ""
    if not text:
        raise ValueError(f"{name} is not set")
    return text


def has_secret(value: SecretStr | None) -> bool:
    return value is not None and bool(value.get_secret_value())


@dataclass(slots=True)
class _Lane:
    work: deque[Work] = field(default_factory=deque)
    task: asyncio.Task[None] | None = None


class ChatLanes:
    """Runs submitted work in order per chat; different chats never wait for each other.

    ``submit`` never blocks. A chat's lane (a task) exists only while it has
    work; a failing piece of work is logged and the lane goes on.
    """

    def __init__(self, what: str) -> None:
        self._what = what
        self._lanes: dict[str, _Lane] = {}

    def __len__(self) -> int:
        return len(self._lanes)

    def submit(self, chat_id: str, work: Work) -> None:
        lane = self._lanes.get(chat_id)
        if lane is None:
            lane = _Lane()
            self._lanes[chat_id] = lane
        lane.work.append(work)
        if lane.task is None:
            lane.task = asyncio.create_task(self._run(chat_id, lane), name=f"{self._what}-lane")

    async def _run(self, chat_id: str, lane: _Lane) -> None:
        try:
            while lane.work:
                work = lane.work.popleft()
                try:
                    await work()
                except Exception:
                    logger.exception("%s: handing over a message failed", self._what)
        finally:
            if self._lanes.get(chat_id) is lane:
                del self._lanes[chat_id]

    async def drain(self, timeout: float) -> int:
        """Wait (at most ``timeout`` seconds) for every lane; returns the lanes cut short."""
        tasks = [lane.task for lane in self._lanes.values() if lane.task is not None]
        if not tasks:
            return 0
        _, pending = await asyncio.wait(tasks, timeout=timeout)
        for task in pending:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if pending:
            logger.warning(
                "%s: %d chat(s) still had messages when stopped", self._what, len(pending)
            )
        return len(pending)


class Backoff:
    """Delays of ``first``, ``first * factor``, … up to ``cap`` seconds, slept by ``sleep``.

    Adapters pass their clock's ``sleep``, so tests move time instead of waiting.
    """

    def __init__(
        self,
        *,
        first: float = 1.0,
        factor: float = 2.0,
        cap: float = 60.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._first = first
        self._factor = factor
        self._cap = cap
        self._sleep = sleep
        self._delay = first

    @property
    def delay(self) -> float:
        """What the next ``wait`` sleeps."""
        return self._delay

    async def wait(self) -> None:
        delay = self._delay
        self._delay = min(self._delay * self._factor, self._cap)
        await self._sleep(delay)

    def reset(self) -> None:
        self._delay = self._first


async def retrying(
    action: Callable[[], Awaitable[T]],
    *,
    attempts: int,
    retry_on: tuple[type[BaseException], ...],
    backoff: Backoff,
    give_up_on: tuple[type[BaseException], ...] = (),
    on_retry: Callable[[BaseException, float], None] | None = None,
) -> T:
    """``action()``, tried again after ``backoff`` on ``retry_on`` errors; the last one raises.

    An error of ``give_up_on`` raises at once, even when it is also a ``retry_on`` kind.
    """
    for attempt in range(1, attempts + 1):
        try:
            return await action()
        except retry_on as exc:
            if attempt == attempts or isinstance(exc, give_up_on):
                raise
            if on_retry is not None:
                on_retry(exc, backoff.delay)
            await backoff.wait()
    raise AssertionError("attempts must be at least 1")


class Sometimes:
    """``due()`` is True at most once per ``interval`` seconds: for log lines a flood could repeat.
    Seconds of the monotonic clock, as the TTLs below: a wall clock set back or forward
    neither silences a line nor repeats it.

    ``missed`` counts the calls that were not due since the last due one.
    """

    def __init__(self, interval: float, clock: Clock | None = None) -> None:
        self._interval = interval
        self._clock = clock or SystemClock()
        self._last: float | None = None
        self.missed = 0

    def due(self) -> bool:
        now = self._clock.monotonic()
        if self._last is not None and now - self._last < self._interval:
            self.missed += 1
            return False
        self._last = now
        return True

    def take_missed(self) -> int:
        missed, self.missed = self.missed, 0
        return missed


class SeenSet:
    """Remembers the newest ``capacity`` keys, each for ``ttl`` seconds when one is given."""

    def __init__(self, capacity: int, *, ttl: float | None = None, clock: Clock | None = None):
        if capacity <= 0:
            raise ValueError("capacity must be positive")
        self._capacity = capacity
        self._ttl = ttl
        self._clock = clock or SystemClock()
        self._seen: OrderedDict[Hashable, float] = OrderedDict()

    def __len__(self) -> int:
        return len(self._seen)

    def add(self, key: Hashable) -> bool:
        """Remember ``key``; False when it was seen already (and is still remembered)."""
        now = self._clock.monotonic()
        self._forget_expired(now)
        if key in self._seen:
            if self._ttl is None:
                self._seen.move_to_end(key)  # kept longest: what keeps coming back
            return False
        self._seen[key] = now
        while len(self._seen) > self._capacity:
            self._seen.popitem(last=False)
        return True

    def _forget_expired(self, now: float) -> None:
        if self._ttl is None:
            return
        while self._seen:
            oldest = next(iter(self._seen.values()))
            if now - oldest < self._ttl:
                return
            self._seen.popitem(last=False)


class RecentValues(Generic[V]):
    """The newest ``capacity`` values looked up, each kept for ``ttl`` seconds."""

    def __init__(self, capacity: int, *, ttl: float, clock: Clock | None = None) -> None:
        if capacity <= 0:
            raise ValueError("capacity must be positive")
        self._capacity = capacity
        self._ttl = ttl
        self._clock = clock or SystemClock()
        self._values: OrderedDict[Hashable, tuple[float, V]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._values)

    def get(self, key: Hashable) -> V | None:
        found = self._values.get(key)
        if found is None:
            return None
        if self._clock.monotonic() - found[0] >= self._ttl:
            del self._values[key]
            return None
        self._values.move_to_end(key)
        return found[1]

    def put(self, key: Hashable, value: V) -> None:
        self._values[key] = (self._clock.monotonic(), value)
        self._values.move_to_end(key)
        while len(self._values) > self._capacity:
            self._values.popitem(last=False)

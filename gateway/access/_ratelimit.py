"""Per-user rate limits: a token bucket for messages and a throttle for notices.

``RateLimiter`` lets each user send ``per_minute`` messages in a burst and then
one every ``60 / per_minute`` seconds. A refused message is dropped, not kept for
later: the first of a run gets ``notify=True`` (one notice, which says so and
when to send again, ``retry_after``), the rest of the run is refused silently.

``NoticeThrottle`` answers yes for a key at most once per interval, so nobody
can make the bot repeat a refusal to them.

``StrangerCap`` counts the notices to strangers (refusals, pairing codes) of all
of them together, so a crowd of strangers cannot make the bot spend its sending
on them; what it holds back is logged once a minute, never per message.

All three measure intervals on the monotonic clock (setting the wall clock back an
hour neither empties a bucket nor silences a notice for that hour), and keep
state in memory only, bounded by ``MAX_KEYS`` (least recently used
first out); a bucket idle long enough to be full again is dropped early, since
it is the same as a new one.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Protocol

from gateway.clock import Clock
from memory.paths import UserKey

__all__ = [
    "MAX_KEYS",
    "LocalRateCheck",
    "NoticeThrottle",
    "RateCheck",
    "RateDecision",
    "RateLimiter",
    "StrangerCap",
]

logger = logging.getLogger(__name__)

MAX_KEYS = 100_000
"""Users remembered at most by one limiter or throttle."""
CAP_WINDOW = 60.0
"""Seconds over which ``StrangerCap`` counts."""


@dataclass(frozen=True, slots=True)
class RateDecision:
    allowed: bool
    notify: bool = False
    retry_after: float | None = None
    """Refused: seconds until the next message would be allowed (None: not known)."""


class _Bucket:
    __slots__ = ("refused", "tokens", "updated")

    def __init__(self, tokens: float, updated: float) -> None:
        self.tokens = tokens
        self.updated = updated
        self.refused = False


class RateLimiter:
    """A token bucket per user key; ``per_minute=0`` lets everything through."""

    def __init__(self, per_minute: int, clock: Clock, *, max_keys: int = MAX_KEYS) -> None:
        if max_keys <= 0:
            raise ValueError("max_keys must be positive")
        self._clock = clock
        self._max_keys = max_keys
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()
        self._lock = threading.Lock()
        self._per_minute = 0
        self.reconfigure(per_minute)

    @property
    def per_minute(self) -> int:
        return self._per_minute

    def reconfigure(self, per_minute: int) -> None:
        """Apply a new limit (after a config reload); users keep the tokens they have."""
        if per_minute < 0:
            raise ValueError("per_minute must be 0 (unlimited) or more")
        with self._lock:
            self._per_minute = per_minute
            for bucket in self._buckets.values():
                bucket.tokens = min(bucket.tokens, float(per_minute))

    def __len__(self) -> int:
        return len(self._buckets)

    def check(self, user_key: str) -> RateDecision:
        """Take one token for ``user_key``'s message, if there is one."""
        with self._lock:
            capacity = float(self._per_minute)
            if capacity <= 0:
                return RateDecision(allowed=True)
            rate = capacity / 60.0
            now = self._clock.monotonic()
            self._prune(now, capacity / rate)
            bucket = self._buckets.get(user_key)
            if bucket is None:
                bucket = _Bucket(capacity, now)
                self._buckets[user_key] = bucket
                if len(self._buckets) > self._max_keys:
                    self._buckets.popitem(last=False)
            else:
                self._buckets.move_to_end(user_key)
                elapsed = max(0.0, now - bucket.updated)
                bucket.tokens = min(capacity, bucket.tokens + elapsed * rate)
                bucket.updated = now
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                bucket.refused = False
                return RateDecision(allowed=True)
            notify = not bucket.refused
            bucket.refused = True
            wait = (1.0 - bucket.tokens) / rate
            return RateDecision(allowed=False, notify=notify, retry_after=wait)

    def _prune(self, now: float, refill_time: float) -> None:
        """Drop least recently used buckets that have been idle long enough to be full."""
        while self._buckets:
            bucket = next(iter(self._buckets.values()))
            if now - bucket.updated < refill_time:
                return
            self._buckets.popitem(last=False)


class RateCheck(Protocol):
    """The intake's rate check: this process's ``RateLimiter``, or one several replicas share."""

    async def check(self, user_key: UserKey) -> RateDecision:
        """Take one message of ``user_key``'s budget, or say it is spent."""
        ...


class LocalRateCheck:
    """``RateCheck`` of one process: its own ``RateLimiter``."""

    def __init__(self, limiter: RateLimiter) -> None:
        self.limiter = limiter

    async def check(self, user_key: UserKey) -> RateDecision:
        return self.limiter.check(str(user_key))


class NoticeThrottle:
    """``allow(key)`` is True at most once per ``interval`` seconds for each key."""

    def __init__(self, interval: float, clock: Clock, *, max_keys: int = MAX_KEYS) -> None:
        if interval <= 0 or max_keys <= 0:
            raise ValueError("interval and max_keys must be positive")
        self._interval = interval
        self._clock = clock
        self._max_keys = max_keys
        self._last: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._last)

    def allow(self, key: str) -> bool:
        with self._lock:
            now = self._clock.monotonic()
            while self._last:
                oldest = next(iter(self._last.values()))
                if now - oldest < self._interval:
                    break
                self._last.popitem(last=False)
            if key in self._last:
                return False
            self._last[key] = now
            if len(self._last) > self._max_keys:
                self._last.popitem(last=False)
            return True

    def forget(self, key: str) -> None:
        """Undo ``allow(key)``: the notice was not sent after all."""
        with self._lock:
            self._last.pop(key, None)


class StrangerCap:
    """``take(per_minute)`` is True for at most ``per_minute`` notices in any minute.

    A refused one is counted; the count is logged at INFO at most once a minute
    (when a notice is asked for a minute or more after the last such line).
    """

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._taken: deque[float] = deque()
        self._held_back = 0
        self._logged = float("-inf")
        self._lock = threading.Lock()

    def take(self, per_minute: int) -> bool:
        with self._lock:
            now = self._clock.monotonic()
            while self._taken and now - self._taken[0] >= CAP_WINDOW:
                self._taken.popleft()
            allowed = len(self._taken) < per_minute
            if allowed:
                self._taken.append(now)
            else:
                self._held_back += 1
            if self._held_back and now - self._logged >= CAP_WINDOW:
                logger.info(
                    "notices to strangers over the cap of %d a minute: %d held back",
                    per_minute,
                    self._held_back,
                )
                self._held_back = 0
                self._logged = now
            return allowed

    def give_back(self) -> None:
        """Undo the last ``take`` that was True: that notice was not sent after all."""
        with self._lock:
            if self._taken:
                self._taken.pop()

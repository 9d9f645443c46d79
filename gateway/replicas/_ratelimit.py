"""``SharedRateLimiter``: one per-user message budget for all replicas together.

Behind a load balancer a user's messages spread over the replicas; with a
bucket per replica each would allow ``per_minute`` and the user would get
``replicas × per_minute``. Here the bucket is a Redis hash and one Lua script
refills, takes and remembers the refusal atomically, so concurrent messages on
different replicas cannot both take the last token.

Semantics are those of ``gateway.access.RateLimiter``: a bucket of
``per_minute`` tokens refilling ``per_minute / 60`` a second; the first refused
message of a run gets ``notify=True`` and the rest of the run is refused
silently until a message is allowed again. A bucket expires once it would be
full again (then it is the same as a new one), so idle users cost nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from redis.asyncio import Redis

from gateway.clock import Clock
from gateway.replicas._common import DEFAULT_PREFIX, LUA_NOW, make_key, now_arg
from gateway.replicas._errors import guard

__all__ = ["SharedRateDecision", "SharedRateLimiter"]

logger = logging.getLogger(__name__)

# KEYS[1] the user's bucket; ARGV: now, capacity (tokens), rate (tokens per ms)
_CHECK = (
    LUA_NOW
    + """
local now = now_ms()
local capacity = tonumber(ARGV[2])
local rate = tonumber(ARGV[3])
local b = redis.call('HMGET', KEYS[1], 'tokens', 'stamp', 'refused')
local tokens, stamp, refused = tonumber(b[1]), tonumber(b[2]), b[3] == '1'
if tokens == nil or stamp == nil then
  tokens, stamp, refused = capacity, now, false
else
  tokens = math.min(capacity, tokens + math.max(0, now - stamp) * rate)
  stamp = math.max(stamp, now)
end
local allowed, notify = 0, 0
if tokens >= 1 then
  tokens, refused, allowed = tokens - 1, false, 1
else
  if not refused then notify = 1 end
  refused = true
end
redis.call('HSET', KEYS[1], 'tokens', fmt(tokens), 'stamp', fmt(stamp),
           'refused', refused and '1' or '0')
redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - tokens) / rate) + 1000)
return {allowed, notify}
"""
)


@dataclass(frozen=True, slots=True)
class SharedRateDecision:
    allowed: bool
    notify: bool = False


class SharedRateLimiter:
    """A token bucket per user key in Redis; ``per_minute=0`` lets everything through.

    ``clock`` is for tests only: without it the Redis server's time is used.
    """

    def __init__(
        self,
        client: Redis,
        per_minute: int,
        *,
        prefix: str = DEFAULT_PREFIX,
        clock: Clock | None = None,
    ) -> None:
        self._client = client
        self._prefix = prefix
        self._clock = clock
        self._script = client.register_script(_CHECK)
        self._per_minute = 0
        self.reconfigure(per_minute)

    @property
    def per_minute(self) -> int:
        return self._per_minute

    def reconfigure(self, per_minute: int) -> None:
        """Apply a new limit; users keep their tokens, capped at the new burst on use."""
        if per_minute < 0:
            raise ValueError("per_minute must be 0 (unlimited) or more")
        self._per_minute = per_minute

    async def check(self, user_key: str) -> SharedRateDecision:
        """Take one token for ``user_key``'s message, if there is one."""
        capacity = self._per_minute
        if capacity <= 0:
            return SharedRateDecision(allowed=True)
        rate_per_ms = capacity / 60_000.0
        key = make_key(self._prefix, "rate", user_key)
        with guard("checking a rate limit"):
            allowed, notify = await self._script(
                keys=[key], args=[now_arg(self._clock), capacity, repr(rate_per_ms)]
            )
        if not allowed:
            logger.debug("rate limit refused %s (notify=%s)", user_key, bool(notify))
        return SharedRateDecision(allowed=bool(allowed), notify=bool(notify))

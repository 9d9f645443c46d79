"""``SharedBudget``: send budgets (token buckets with flood blocks) shared by replicas.

Telegram counts a bot's messages per chat (1/s with a burst of 3 in a private
chat, 20/min in a group) and in total (about 30/s), whichever replica sends
them. An in-process pacer per replica would let two replicas together send
twice that and earn flood bans, so the buckets live in Redis hashes and one Lua
script refills, checks and spends them atomically.

``reserve()`` never sleeps: it either spends a token now (returns 0.0) or says
how long to wait and spends nothing, so the caller sleeps with its own clock
and asks again; nothing is held in Redis while a caller waits. A ``block()``
(Telegram's ``retry_after``) stops every replica from taking from the key until
it ends. ``reserve_many()`` spends from several buckets at once or from none, so
a chat's budget is not spent while the global one makes the message wait.

A bucket expires from Redis once it would be full and unblocked again, which
is the same as a new bucket.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from redis.asyncio import Redis

from gateway.clock import Clock
from gateway.replicas._common import DEFAULT_PREFIX, LUA_NOW, make_key, ms, now_arg, text
from gateway.replicas._errors import guard

__all__ = ["Budget", "BudgetState", "SharedBudget"]

logger = logging.getLogger(__name__)

# KEYS: buckets; ARGV: now, take ('1'/'0'), then rate (per ms) and burst for each key.
# Returns {wait in seconds, fewest tokens left among the buckets} as strings.
_RESERVE = (
    LUA_NOW
    + """
local now = now_ms()
local take = ARGV[2] == '1'
local wait, fewest = 0, nil
local state = {}
for i = 1, #KEYS do
  local rate, burst = tonumber(ARGV[1 + 2 * i]), tonumber(ARGV[2 + 2 * i])
  local b = redis.call('HMGET', KEYS[i], 'tokens', 'stamp', 'blocked')
  local tokens, stamp, blocked = tonumber(b[1]), tonumber(b[2]), tonumber(b[3]) or 0
  if tokens == nil or stamp == nil then
    tokens, stamp = burst, now
  end
  tokens = math.min(burst, tokens + math.max(0, now - stamp) * rate)
  local w = math.max(0, blocked - now)
  if tokens < 1 - 1e-9 then w = math.max(w, (1 - tokens) / rate) end
  wait = math.max(wait, w)
  if fewest == nil or tokens < fewest then fewest = tokens end
  state[i] = {rate, burst, tokens, blocked}
end
if wait > 0 or not take then return {fmt(wait / 1000), fmt(fewest or 0)} end
fewest = nil
for i = 1, #KEYS do
  local rate, burst, tokens, blocked = unpack(state[i])
  tokens = math.max(0, tokens - 1)
  if fewest == nil or tokens < fewest then fewest = tokens end
  redis.call('HSET', KEYS[i], 'tokens', fmt(tokens), 'stamp', fmt(now))
  local keep = math.max((burst - tokens) / rate, blocked - now)
  redis.call('PEXPIRE', KEYS[i], math.ceil(keep) + 1000)
end
return {'0', fmt(fewest or 0)}
"""
)

# KEYS[1] bucket; ARGV: now, seconds (ms). Extends the block, never shortens it.
_BLOCK = (
    LUA_NOW
    + """
local now = now_ms()
local ends = now + tonumber(ARGV[2])
local blocked = tonumber(redis.call('HGET', KEYS[1], 'blocked')) or 0
if ends > blocked then
  redis.call('HSET', KEYS[1], 'blocked', fmt(ends))
  blocked = ends
end
local keep = math.ceil(blocked - now) + 1000
if redis.call('PTTL', KEYS[1]) < keep then redis.call('PEXPIRE', KEYS[1], keep) end
return fmt((blocked - now) / 1000)
"""
)

# KEYS[1] bucket; ARGV: now. Seconds left of its block.
_BLOCKED_FOR = (
    LUA_NOW
    + """
local blocked = tonumber(redis.call('HGET', KEYS[1], 'blocked')) or 0
return fmt(math.max(0, blocked - now_ms()) / 1000)
"""
)


@dataclass(frozen=True, slots=True)
class Budget:
    """One bucket: its key, tokens refilled per second, and the most it holds."""

    key: str
    rate: float
    burst: float

    def __post_init__(self) -> None:
        if self.rate <= 0 or self.burst < 1:
            raise ValueError("a budget needs rate > 0 and burst >= 1")


@dataclass(frozen=True, slots=True)
class BudgetState:
    """What ``peek()`` sees: seconds until one token, and the fewest tokens left."""

    wait: float
    tokens: float


class SharedBudget:
    """Token buckets in Redis that every replica spends from.

    ``clock`` is for tests only: without it the Redis server's time is used.
    """

    def __init__(
        self, client: Redis, *, prefix: str = DEFAULT_PREFIX, clock: Clock | None = None
    ) -> None:
        self._client = client
        self._prefix = prefix
        self._clock = clock
        self._reserve = client.register_script(_RESERVE)
        self._block = client.register_script(_BLOCK)
        self._blocked_for = client.register_script(_BLOCKED_FOR)

    def _key(self, key: str) -> str:
        return make_key(self._prefix, "budget", key)

    async def reserve(self, key: str, rate: float, burst: float) -> float:
        """Take one token now and return 0.0, or return the seconds to wait (taking none)."""
        return await self.reserve_many([Budget(key, rate, burst)])

    async def reserve_many(self, budgets: Sequence[Budget]) -> float:
        """Take one token from every bucket, or from none and return the longest wait."""
        wait, _ = await self._run(budgets, take=True)
        return wait

    async def peek(self, budgets: Sequence[Budget]) -> BudgetState:
        """The wait ``reserve_many`` would return and the fewest tokens; spends nothing."""
        wait, tokens = await self._run(budgets, take=False)
        return BudgetState(wait=wait, tokens=tokens)

    async def _run(self, budgets: Sequence[Budget], *, take: bool) -> tuple[float, float]:
        if not budgets:
            raise ValueError("reserve needs at least one budget")
        args: list[str] = [now_arg(self._clock), "1" if take else "0"]
        for budget in budgets:
            args += [repr(budget.rate / 1000.0), repr(float(budget.burst))]
        keys = [self._key(b.key) for b in budgets]
        with guard("reserving a send budget"):
            wait, tokens = await self._reserve(keys=keys, args=args)
        return float(text(wait)), float(text(tokens))

    async def block(self, key: str, seconds: float) -> None:
        """A flood ban: nobody takes from ``key`` for ``seconds`` (an existing longer one stays)."""
        if seconds <= 0:
            return
        with guard("blocking a send budget"):
            left = await self._block(
                keys=[self._key(key)], args=[now_arg(self._clock), ms(seconds)]
            )
        logger.info("send budget %s blocked for %.1f s", key, float(text(left)))

    async def blocked_for(self, key: str) -> float:
        """Seconds left of a block on ``key`` (0.0 when none)."""
        with guard("reading a send budget"):
            left = await self._blocked_for(keys=[self._key(key)], args=[now_arg(self._clock)])
        return float(text(left))

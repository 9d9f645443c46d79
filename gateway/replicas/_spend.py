"""``SharedSpend``: the budgets' spend counters in Redis, shared by every replica and worker.

One hash per person and period (``chorus:spend:<person>:day:2026-12-02``) with
``tokens``, ``cost`` (settled) and ``held_tokens``, ``held_cost`` (calls in
flight). One Lua script checks the limits and holds the estimate atomically,
so two replicas spending one person's budget at once cannot both pass a check
the first one's hold should have failed: together they overspend by one call
at most. A hash starts from the ledger's numbers the first time any process
meets the period (the script answers ``base`` and is run again with them; a
hash with ``init`` set is never started twice) and expires a day after its
period ends.

A settle needs no answer, so it does not cost a round trip of its own: the
caller passes the settles it has not sent yet (``SpendSettle``) to its next
``hold()`` or ``read()``, whose script applies them first, in the same
EVALSHA; ``settle()`` sends them alone (when nothing else goes to Redis soon).
A settle changes only hashes that exist, so one carried past its period's end
starts nothing.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from redis.asyncio import Redis

from gateway.replicas._common import DEFAULT_PREFIX, make_key, text
from gateway.replicas._errors import ReplicaError, guard

__all__ = ["SharedSpend", "SpendSettle", "open_shared_spend"]

KEEP_AFTER_END = 86_400
"""Seconds a period's counters stay in Redis after the period ended."""

# Carried settles: KEYS from ``first_key`` on are (day hash, month hash) pairs; ARGV from
# ``first_arg`` on are, for each pair, held tokens, held cost, used tokens, used cost.
_SETTLE_CARRIED = """
local function settle_carried(first_key, first_arg)
  local a = first_arg
  for k = first_key, #KEYS, 2 do
    for i = k, k + 1 do
      if redis.call('EXISTS', KEYS[i]) == 1 then
        redis.call('HINCRBYFLOAT', KEYS[i], 'held_tokens', -tonumber(ARGV[a]))
        redis.call('HINCRBYFLOAT', KEYS[i], 'held_cost', -tonumber(ARGV[a + 1]))
        redis.call('HINCRBYFLOAT', KEYS[i], 'tokens', ARGV[a + 2])
        redis.call('HINCRBYFLOAT', KEYS[i], 'cost', ARGV[a + 3])
      end
    end
    a = a + 4
  end
end
"""

# KEYS: day hash, month hash, then carried settles.
# ARGV: tokens, cost, token limit ('' none), cost limit ('' none), enforce ('1'/'0'),
#       day base tokens, day base cost, month base tokens, month base cost ('' unknown),
#       day expiry (unix s), month expiry (unix s), then carried settles.
# Returns 'base' (start the counters first), 'ok', or the limit reached ('day'/'month').
_HOLD = (
    _SETTLE_CARRIED
    + """
local function ready(key, tokens, cost, expire)
  if redis.call('HEXISTS', key, 'init') == 1 then return true end
  if tokens == '' then return false end
  redis.call('HINCRBYFLOAT', key, 'tokens', tokens)
  redis.call('HINCRBYFLOAT', key, 'cost', cost)
  redis.call('HSET', key, 'init', '1')
  redis.call('EXPIREAT', key, expire)
  return true
end
local function num(key, field) return tonumber(redis.call('HGET', key, field) or '0') end
settle_carried(3, 12)
if not ready(KEYS[1], ARGV[6], ARGV[7], ARGV[10]) then return 'base' end
if not ready(KEYS[2], ARGV[8], ARGV[9], ARGV[11]) then return 'base' end
if ARGV[5] == '1' then
  local day = num(KEYS[1], 'tokens') + num(KEYS[1], 'held_tokens')
  if ARGV[3] ~= '' and day >= tonumber(ARGV[3]) then return 'day' end
  if ARGV[4] ~= '' and num(KEYS[2], 'cost') + num(KEYS[2], 'held_cost') >= tonumber(ARGV[4]) then
    return 'month'
  end
end
for i = 1, 2 do
  redis.call('HINCRBYFLOAT', KEYS[i], 'held_tokens', ARGV[1])
  redis.call('HINCRBYFLOAT', KEYS[i], 'held_cost', ARGV[2])
end
return 'ok'
"""
)

# KEYS and ARGV: settles only.
_SETTLE = (
    _SETTLE_CARRIED
    + """
settle_carried(1, 1)
return 1
"""
)

# KEYS: day hash, month hash, then carried settles; ARGV: carried settles.
# Returns 'base' (not started) or the fields of both, in order.
_READ = (
    _SETTLE_CARRIED
    + """
settle_carried(3, 1)
local found = {}
for i = 1, 2 do
  if redis.call('HEXISTS', KEYS[i], 'init') == 0 then return 'base' end
  local values = redis.call('HMGET', KEYS[i], 'tokens', 'cost', 'held_tokens', 'held_cost')
  for j = 1, 4 do found[#found + 1] = values[j] or '0' end
end
return found
"""
)


Period = tuple[str, float]
"""A period's name (``day:2026-12-02``) and when it ends (unix seconds)."""
Bases = Callable[[], Awaitable[list[tuple[float, float]]]]
"""The person's (tokens, cost) of the day and of the month, from the ledger."""


@dataclass(frozen=True, slots=True)
class SpendSettle:
    """A finished call's correction: its hold (tokens, cost) replaced by what it used."""

    person: str
    periods: tuple[Period, Period]
    held: tuple[float, float]
    used: tuple[float, float]


class SharedSpend:
    def __init__(self, client: Redis, *, prefix: str = DEFAULT_PREFIX) -> None:
        self._client = client
        self._prefix = prefix
        self._hold = client.register_script(_HOLD)
        self._settle = client.register_script(_SETTLE)
        self._read = client.register_script(_READ)

    def _keys(self, person: str, periods: Sequence[Period]) -> list[str]:
        return [make_key(self._prefix, "spend", person, name) for name, _ in periods]

    def _carried(self, settles: Sequence[SpendSettle]) -> tuple[list[str], list[str]]:
        """The keys and arguments that apply ``settles`` in one of the scripts."""
        keys: list[str] = []
        args: list[str] = []
        for one in settles:
            keys += self._keys(one.person, one.periods)
            args += [repr(float(v)) for v in (*one.held, *one.used)]
        return keys, args

    async def hold(
        self,
        person: str,
        periods: tuple[Period, Period],
        amount: tuple[float, float],
        limits: tuple[float | None, float | None] | None,
        bases: Bases,
        carried: Sequence[SpendSettle] = (),
    ) -> str | None:
        """Hold (tokens, cost) in the day's and month's counters unless ``limits`` (day
        tokens, month cost; None: not enforced) is reached; returns which was, or None.
        ``carried`` settles are applied first, in the same round trip."""
        keys = self._keys(person, periods)
        token_limit, cost_limit = limits if limits is not None else (None, None)
        args = [
            repr(float(amount[0])),
            repr(float(amount[1])),
            "" if token_limit is None else repr(float(token_limit)),
            "" if cost_limit is None else repr(float(cost_limit)),
            "0" if limits is None else "1",
        ]
        expiries = [str(math.ceil(end) + KEEP_AFTER_END) for _, end in periods]
        base_args = ["", "", "", ""]
        extra_keys, extra_args = self._carried(carried)
        for _ in range(2):
            with guard("hold a budget"):
                answer = text(
                    await self._hold(
                        keys=[*keys, *extra_keys],
                        args=[*args, *base_args, *expiries, *extra_args],
                    )
                )
            if answer != "base":
                return None if answer == "ok" else answer
            extra_keys, extra_args = [], []  # applied by the first run
            base_args = [repr(float(v)) for pair in await bases() for v in pair]
        raise ReplicaError("the budget counters could not be started")

    async def settle(self, settles: Sequence[SpendSettle]) -> None:
        """Apply ``settles`` now (one round trip for all of them)."""
        if not settles:
            return
        keys, args = self._carried(settles)
        with guard("settle a budget"):
            await self._settle(keys=keys, args=args)

    async def read(
        self,
        person: str,
        periods: tuple[Period, Period],
        bases: Bases,
        carried: Sequence[SpendSettle] = (),
    ) -> list[tuple[float, float, float, float]]:
        """(tokens, cost, held tokens, held cost) of the day and of the month, after
        ``carried`` settles are applied (in the same round trip)."""
        keys = self._keys(person, periods)
        extra_keys, extra_args = self._carried(carried)
        for _ in range(2):
            with guard("read a budget"):
                answer = await self._read(keys=[*keys, *extra_keys], args=extra_args)
            extra_keys, extra_args = [], []
            if not isinstance(answer, list):  # 'base': not started in this period yet
                await self.hold(person, periods, (0.0, 0.0), None, bases)
                continue
            v = [float(text(x)) for x in answer]
            return [
                (v[0], v[1], max(0.0, v[2]), max(0.0, v[3])),
                (v[4], v[5], max(0.0, v[6]), max(0.0, v[7])),
            ]
        raise ReplicaError("the budget counters could not be started")

    async def aclose(self) -> None:
        await self._client.aclose()


def open_shared_spend(url: str, *, prefix: str = DEFAULT_PREFIX) -> SharedSpend:
    """Counters on the Redis at ``url`` (a client of their own, for the loop that uses it)."""
    from gateway.replicas._coordination import SOCKET_TIMEOUT, reconnecting

    client = Redis.from_url(
        url,
        socket_timeout=SOCKET_TIMEOUT,
        socket_connect_timeout=SOCKET_TIMEOUT,
        retry=reconnecting(),
    )
    return SharedSpend(client, prefix=prefix)

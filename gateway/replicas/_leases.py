"""``SessionLeases``: which replica owns a session, with fencing tokens.

Each session is handled by one replica at a time (its turn lock, its running
agent loop live in that process). A replica takes a lease on a session before
handling it and renews it every ``ttl / 3``; a replica that dies stops renewing
and, ``ttl`` later, another one takes the session over.

A lease alone cannot stop a replica that stalled (GC pause, partition) from
writing after its lease ran out, so every lease carries a fencing token: a
number from one global ``INCR``, strictly larger at each takeover. Writers pass
it along and a store refuses writes with a token older than the newest it has
seen.

A lease is a hash ``{owner, token, expires}``; ``expires`` is in the Redis
server's milliseconds (or a test clock's), so replicas with skewed clocks agree.
A lease that expired but that nobody took over may still be renewed by its
owner: its token is unchanged, so no one else wrote meanwhile. The key itself
expires at ``2 × ttl`` so abandoned leases do not pile up.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from redis.asyncio import Redis

from gateway.clock import Clock
from gateway.replicas._common import DEFAULT_PREFIX, LUA_NOW, make_key, ms, now_arg, text
from gateway.replicas._errors import guard

__all__ = ["Lease", "SessionLeases"]

logger = logging.getLogger(__name__)

# KEYS[1] lease, KEYS[2] token counter; ARGV: now, owner, ttl (ms), and optionally the
# replica known to be dead whose live lease may be taken over.
# Returns {owner, token, 1 if the caller holds it now else 0, the owner before a new token}.
_ACQUIRE = (
    LUA_NOW
    + """
local now = now_ms()
local ttl = tonumber(ARGV[3])
local cur = redis.call('HMGET', KEYS[1], 'owner', 'token', 'expires')
local expires = tonumber(cur[3])
local dead = ARGV[4] and ARGV[4] ~= '' and cur[1] == ARGV[4]
if cur[1] and cur[2] and expires and expires > now and not dead then
  if cur[1] ~= ARGV[2] then return {cur[1], cur[2], 0} end
  redis.call('HSET', KEYS[1], 'expires', fmt(now + ttl))
  redis.call('PEXPIRE', KEYS[1], 2 * ttl)
  return {cur[1], cur[2], 1}
end
local token = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'owner', ARGV[2], 'token', token, 'expires', fmt(now + ttl))
redis.call('PEXPIRE', KEYS[1], 2 * ttl)
return {ARGV[2], tostring(token), 1, cur[1] or ''}
"""
)

# KEYS[1] lease; ARGV: now, owner, token, ttl (ms). 1 if renewed, 0 if lost.
_RENEW = (
    LUA_NOW
    + """
local cur = redis.call('HMGET', KEYS[1], 'owner', 'token')
if cur[1] ~= ARGV[2] or cur[2] ~= ARGV[3] then return 0 end
local ttl = tonumber(ARGV[4])
redis.call('HSET', KEYS[1], 'expires', fmt(now_ms() + ttl))
redis.call('PEXPIRE', KEYS[1], 2 * ttl)
return 1
"""
)

# KEYS[1] lease; ARGV: now (unused), owner, token. 1 if it was ours and is gone.
_RELEASE = """
local cur = redis.call('HMGET', KEYS[1], 'owner', 'token')
if cur[1] ~= ARGV[2] or cur[2] ~= ARGV[3] then return 0 end
redis.call('DEL', KEYS[1])
return 1
"""

# KEYS[1] lease; ARGV: now. {owner, token} of a live lease, else nil.
_OWNER = (
    LUA_NOW
    + """
local cur = redis.call('HMGET', KEYS[1], 'owner', 'token', 'expires')
local expires = tonumber(cur[3])
if cur[1] and cur[2] and expires and expires > now_ms() then return {cur[1], cur[2]} end
return nil
"""
)


@dataclass(frozen=True, slots=True)
class Lease:
    """``owner`` holds ``session``; ``token`` fences its writes (larger = newer)."""

    session: str
    owner: str
    token: int
    previous: str | None = field(default=None, compare=False)
    """Who held the session before this token (its lease ran out or was taken over):
    a replica that died may still owe the session's messages in its mailbox."""


class SessionLeases:
    """Leases on sessions for one replica (``replica_id``, unique per process).

    ``clock`` is for tests only: without it the Redis server's time is used.
    """

    def __init__(
        self,
        client: Redis,
        replica_id: str,
        *,
        ttl: float = 30.0,
        prefix: str = DEFAULT_PREFIX,
        clock: Clock | None = None,
    ) -> None:
        if not replica_id:
            raise ValueError("replica_id must not be empty")
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        self._client = client
        self.replica_id = replica_id
        self.ttl = ttl
        self._ttl_ms = ms(ttl)
        self._prefix = prefix
        self._clock = clock
        self._counter = make_key(prefix, "lease-token")
        self._acquire = client.register_script(_ACQUIRE)
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)
        self._owner = client.register_script(_OWNER)

    def _key(self, session: str) -> str:
        return make_key(self._prefix, "lease", session)

    async def acquire(self, session: str) -> Lease | None:
        """This replica's lease on ``session`` (taken or extended), or None if another holds it."""
        with guard("acquiring a session lease"):
            found = await self._acquire(
                keys=[self._key(session), self._counter],
                args=[now_arg(self._clock), self.replica_id, self._ttl_ms],
            )
        return self._taken(session, found)

    async def take_over(self, session: str, dead_replica: str) -> Lease | None:
        """Like ``acquire``, but a live lease of ``dead_replica`` (known dead: it left the
        registry) is taken over at once, with a new token, instead of waited out."""
        with guard("taking over a session lease"):
            found = await self._acquire(
                keys=[self._key(session), self._counter],
                args=[now_arg(self._clock), self.replica_id, self._ttl_ms, dead_replica],
            )
        return self._taken(session, found)

    def _taken(self, session: str, found: list[object]) -> Lease | None:
        owner, token, mine = found[:3]
        if not int(text(mine)):
            logger.debug("session %s is held by replica %s", session, text(owner))
            return None
        previous = text(found[3]) if len(found) > 3 else ""
        return Lease(session, self.replica_id, int(text(token)), previous or None)

    async def renew(self, lease: Lease) -> bool:
        """Extend ``lease``; False when it was lost (taken over, or released)."""
        with guard("renewing a session lease"):
            renewed = await self._renew(
                keys=[self._key(lease.session)], args=self._args(lease, with_ttl=True)
            )
        if not renewed:
            logger.warning("lease on session %s (token %d) was lost", lease.session, lease.token)
        return bool(renewed)

    async def renew_all(self, leases: Sequence[Lease]) -> list[Lease]:
        """Renew every lease in one round trip; returns the ones that were lost."""
        if not leases:
            return []
        with guard("renewing session leases"):
            async with self._client.pipeline(transaction=False) as pipe:
                for lease in leases:
                    await self._renew(
                        keys=[self._key(lease.session)],
                        args=self._args(lease, with_ttl=True),
                        client=pipe,
                    )
                results = await pipe.execute()
        lost = [lease for lease, ok in zip(leases, results, strict=True) if not ok]
        if lost:
            logger.warning("%d of %d session leases were lost", len(lost), len(leases))
        return lost

    async def release(self, lease: Lease) -> bool:
        """Give ``lease`` up if it is still ours (same token); True if it was."""
        with guard("releasing a session lease"):
            released = await self._release(
                keys=[self._key(lease.session)], args=self._args(lease, with_ttl=False)
            )
        return bool(released)

    async def owner(self, session: str) -> Lease | None:
        """The live lease on ``session``, whoever holds it; None when nobody does."""
        with guard("reading a session lease"):
            found = await self._owner(keys=[self._key(session)], args=[now_arg(self._clock)])
        if not found:
            return None
        owner, token = found
        return Lease(session, text(owner), int(text(token)))

    def _args(self, lease: Lease, *, with_ttl: bool) -> list[str | int]:
        args: list[str | int] = [now_arg(self._clock), self.replica_id, str(lease.token)]
        return [*args, self._ttl_ms] if with_ttl else args

"""``ReplicaRegistry`` and ``PollerLock``: who is alive, and who may poll.

The registry is one sorted set: member = replica id, score = when its last
heartbeat runs out (Redis server milliseconds, or a test clock's). A replica
heartbeats every ``ttl / 3``; the others see it dead ``ttl`` after its last beat
and may then claim its mailbox and, once its leases ran out, its sessions.
Dead members are dropped on every heartbeat, so the set stays small; a second
set remembers every replica that ever beat until ``forget`` (after its mailbox
was claimed), so ``dead()`` names the ones that stopped without a trace.

``PollerLock`` exists because Telegram hands each update of a bot to one
``getUpdates`` caller only: two replicas long polling the same bot token would
steal updates from each other and get ``Conflict`` errors. The lock is a plain
``SET NX PX`` key whose value names the holder (replica id plus a random part,
so a second process started with the same replica id is refused too); renew
and release compare that value in a script, so nobody extends or deletes a
lock it lost. The caller names the lock with a hash of the token, never the
token itself.
"""

from __future__ import annotations

import logging
import secrets

from redis.asyncio import Redis

from gateway.clock import Clock
from gateway.replicas._common import DEFAULT_PREFIX, LUA_NOW, make_key, ms, now_arg, text
from gateway.replicas._errors import guard

__all__ = ["PollerLock", "ReplicaRegistry"]

logger = logging.getLogger(__name__)

# KEYS[1] registry, KEYS[2] every replica known, KEYS[3] forgotten; ARGV: now, replica, ttl (ms)
_HEARTBEAT = (
    LUA_NOW
    + """
local now = now_ms()
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', fmt(now))
redis.call('ZADD', KEYS[1], fmt(now + tonumber(ARGV[3])), ARGV[2])
redis.call('SADD', KEYS[2], ARGV[2])
redis.call('ZREM', KEYS[3], ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', fmt(now - 86400000))
return 1
"""
)

# KEYS[1] forgotten; ARGV: now, replica.
_FORGET = (
    LUA_NOW
    + """
redis.call('ZADD', KEYS[1], fmt(now_ms()), ARGV[2])
return 1
"""
)

# KEYS[1] registry; ARGV: now. The members whose heartbeat has not run out.
_ALIVE = (
    LUA_NOW
    + """
return redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. fmt(now_ms()), '+inf')
"""
)

# KEYS[1] registry; ARGV: now, replica. 1 if alive.
_IS_ALIVE = (
    LUA_NOW
    + """
local score = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[2]))
if score and score > now_ms() then return 1 end
return 0
"""
)

# KEYS[1] registry, KEYS[2] every replica known, KEYS[3] forgotten; ARGV: now, replica.
# 1 if the replica beat once and its heartbeat ran out (or it left, or was forgotten).
_STOPPED = (
    LUA_NOW
    + """
local score = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[2]))
if score and score > now_ms() then return 0 end
if redis.call('ZSCORE', KEYS[3], ARGV[2]) then return 1 end
return redis.call('SISMEMBER', KEYS[2], ARGV[2])
"""
)


class ReplicaRegistry:
    """This replica's heartbeat, and the set of replicas alive.

    ``clock`` is for tests only: without it the Redis server's time is used.
    """

    def __init__(
        self,
        client: Redis,
        replica_id: str,
        *,
        ttl: float = 15.0,
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
        self._clock = clock
        self._key = make_key(prefix, "replicas")
        self._known = make_key(prefix, "replicas-known")
        self._forgotten = make_key(prefix, "replicas-forgotten")
        """Replicas claimed from (a day long): still stopped, though no longer known."""
        self._heartbeat = client.register_script(_HEARTBEAT)
        self._alive = client.register_script(_ALIVE)
        self._is_alive = client.register_script(_IS_ALIVE)
        self._stopped = client.register_script(_STOPPED)
        self._forget = client.register_script(_FORGET)

    async def heartbeat(self) -> None:
        """This replica is alive for another ``ttl`` seconds."""
        with guard("sending a replica heartbeat"):
            await self._heartbeat(
                keys=[self._key, self._known, self._forgotten],
                args=[now_arg(self._clock), self.replica_id, ms(self.ttl)],
            )

    async def alive(self) -> set[str]:
        """Ids of the replicas whose heartbeat has not run out (this one included)."""
        with guard("listing live replicas"):
            members = await self._alive(keys=[self._key], args=[now_arg(self._clock)])
        return {text(m) for m in members}

    async def is_alive(self, replica: str) -> bool:
        with guard("checking a replica"):
            alive = await self._is_alive(keys=[self._key], args=[now_arg(self._clock), replica])
        return bool(alive)

    async def stopped(self, replica: str) -> bool:
        """Whether ``replica`` is known to have stopped: it beat once, and its heartbeat
        ran out or it left. One the registry does not know (Redis lost its data and it
        has not beaten since) has not stopped: its leases are waited out instead."""
        with guard("checking a replica"):
            found = await self._stopped(
                keys=[self._key, self._known, self._forgotten],
                args=[now_arg(self._clock), replica],
            )
        return bool(found)

    async def dead(self) -> set[str]:
        """Replicas that beat once and stopped, not yet forgotten (never this one)."""
        alive = await self.alive()
        with guard("listing known replicas"):
            known = await self._client.smembers(self._known)
        return {text(m) for m in known} - alive - {self.replica_id}

    async def forget(self, replica: str) -> bool:
        """``replica`` is dead and nothing of it is left to claim. False when it was
        forgotten already (another claim of its mailbox came first)."""
        with guard("forgetting a replica"):
            known = await self._client.srem(self._known, replica)
            await self._forget(keys=[self._forgotten], args=[now_arg(self._clock), replica])
        return bool(known)

    async def leave(self) -> None:
        """Shutting down: the others see this replica dead at once."""
        with guard("leaving the replica registry"):
            await self._client.zrem(self._key, self.replica_id)
        logger.info("replica %s left the registry", self.replica_id)


# KEYS[1] lock; ARGV: holder, ttl (ms). 1 if the holder has it now.
_LOCK_ACQUIRE = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""

# KEYS[1] lock; ARGV: holder, ttl (ms) or '' to release. 1 if it was the holder's.
_LOCK_KEEP = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1
"""


class PollerLock:
    """One holder at a time for ``name`` (e.g. a hash of a bot token), for ``ttl`` seconds.

    The holder renews every ``ttl / 3``; when ``renew`` returns False it has lost
    the lock and must stop polling.
    """

    def __init__(
        self,
        client: Redis,
        name: str,
        replica_id: str,
        ttl: float = 30.0,
        *,
        prefix: str = DEFAULT_PREFIX,
    ) -> None:
        if not name or not replica_id:
            raise ValueError("name and replica_id must not be empty")
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        self._client = client
        self.name = name
        self.replica_id = replica_id
        self._holder = f"{replica_id} {secrets.token_hex(8)}"
        self._ttl_ms = ms(ttl)
        self._key = make_key(prefix, "poller", name)
        self._acquire = client.register_script(_LOCK_ACQUIRE)
        self._keep = client.register_script(_LOCK_KEEP)

    async def acquire(self) -> bool:
        """Take the lock (or extend it if this object holds it); False if another does."""
        with guard("taking the poller lock"):
            got = await self._acquire(keys=[self._key], args=[self._holder, self._ttl_ms])
        if not got:
            logger.warning("poller lock %s is held by another process", self.name)
        return bool(got)

    async def renew(self) -> bool:
        """Extend the lock; False when it was lost (expired and taken, or released)."""
        with guard("renewing the poller lock"):
            kept = await self._keep(keys=[self._key], args=[self._holder, self._ttl_ms])
        if not kept:
            logger.warning("poller lock %s was lost", self.name)
        return bool(kept)

    async def release(self) -> None:
        """Give the lock up if this object still holds it."""
        with guard("releasing the poller lock"):
            await self._keep(keys=[self._key], args=[self._holder, ""])

    async def holder(self) -> str | None:
        """Replica id of the current holder (for an operator's message), or None."""
        with guard("reading the poller lock"):
            value = await self._client.get(self._key)
        return None if value is None else text(value).partition(" ")[0]

"""``Handoff``: a message to its session owner's mailbox in one round trip.

Routing a message asks who holds the session's lease (taking a free one),
whether a holder that is not this replica has stopped, and appends the message
to the owner's stream (``ReplicaMailbox``). Done as three or four calls, that is
most of a message's Redis time; ``route`` does the common cases in one script:

- the lease is this replica's: it is extended and the message goes to this
  replica's stream;
- another live replica holds it: the message goes to that replica's stream;
- nobody holds it, and its last holder (if another replica) has not stopped:
  this replica takes it (a new fencing token) and the message goes to its stream.

When the holder, or the last holder of a lease that ran out, has stopped, nothing
is written: what that replica still owed must be claimed first, which the caller
does the long way (``SessionOwnership.owner_of``) before sending. The script
writes the same lease hash as ``SessionLeases`` and reads the same registry as
``ReplicaRegistry.stopped``.
"""

from __future__ import annotations

from dataclasses import dataclass

from redis.asyncio import Redis

from gateway.clock import Clock
from gateway.replicas._common import DEFAULT_PREFIX, LUA_NOW, make_key, ms, now_arg, text
from gateway.replicas._errors import guard
from gateway.replicas._mailbox import MAX_LEN

__all__ = ["Handoff", "Routed"]

# KEYS: lease, token counter, registry, every replica known, forgotten.
# ARGV: now, me, ttl (ms), stream prefix, maxlen, then the entry's fields and values.
# Returns {owner, token, entry id or '' when nothing was sent, the holder before a new token}.
_ROUTE = (
    LUA_NOW
    + """
local now = now_ms()
local me, ttl = ARGV[2], tonumber(ARGV[3])
local function stopped(replica)
  local score = tonumber(redis.call('ZSCORE', KEYS[3], replica))
  if score and score > now then return false end
  if redis.call('ZSCORE', KEYS[5], replica) then return true end
  return redis.call('SISMEMBER', KEYS[4], replica) == 1
end
local function send(owner)
  return redis.call('XADD', ARGV[4] .. owner, 'MAXLEN', '~', ARGV[5], '*', unpack(ARGV, 6))
end
local cur = redis.call('HMGET', KEYS[1], 'owner', 'token', 'expires')
local expires = tonumber(cur[3])
if cur[1] and cur[2] and expires and expires > now then
  if cur[1] == me then
    redis.call('HSET', KEYS[1], 'expires', fmt(now + ttl))
    redis.call('PEXPIRE', KEYS[1], 2 * ttl)
    return {me, cur[2], send(me), ''}
  end
  if stopped(cur[1]) then return {cur[1], cur[2], '', ''} end
  return {cur[1], cur[2], send(cur[1]), ''}
end
if cur[1] and cur[1] ~= me and stopped(cur[1]) then return {cur[1], cur[2] or '', '', ''} end
local token = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'owner', me, 'token', token, 'expires', fmt(now + ttl))
redis.call('PEXPIRE', KEYS[1], 2 * ttl)
return {me, tostring(token), send(me), cur[1] or ''}
"""
)


@dataclass(frozen=True, slots=True)
class Routed:
    """Who owns the session; ``entry`` is the mailbox entry's id, '' when nothing was
    sent (a stopped replica is involved: claim what it owed, then send)."""

    owner: str
    token: int
    entry: str
    previous: str | None = None


class Handoff:
    """``route(session, payload)`` for one replica (``clock``: tests only)."""

    def __init__(
        self,
        client: Redis,
        replica_id: str,
        *,
        ttl: float,
        prefix: str = DEFAULT_PREFIX,
        clock: Clock | None = None,
    ) -> None:
        if not replica_id:
            raise ValueError("replica_id must not be empty")
        self.replica_id = replica_id
        self._ttl_ms = ms(ttl)
        self._prefix = prefix
        self._clock = clock
        self._fixed_keys = [
            make_key(prefix, "lease-token"),
            make_key(prefix, "replicas"),
            make_key(prefix, "replicas-known"),
            make_key(prefix, "replicas-forgotten"),
        ]
        self._streams = make_key(prefix, "mailbox", "")
        self._route = client.register_script(_ROUTE)

    async def route(self, session: str, payload: dict[str, str]) -> Routed:
        """Send ``payload`` to the mailbox of ``session``'s owner, taking a free lease."""
        if not payload:
            raise ValueError("a mailbox payload needs at least one field")
        fields = [part for pair in payload.items() for part in pair]
        args: list[str | int] = [
            now_arg(self._clock),
            self.replica_id,
            self._ttl_ms,
            self._streams,
            MAX_LEN,
            *fields,
        ]
        with guard("routing a message to its replica"):
            found = await self._route(
                keys=[make_key(self._prefix, "lease", session), *self._fixed_keys], args=args
            )
        owner, token, entry, previous = (text(x) for x in found)
        return Routed(owner, int(token or 0), entry, previous or None)

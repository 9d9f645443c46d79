"""``ReplicaMailbox``: hand a message to the replica that owns its session.

A platform may deliver a message to any replica (a webhook behind a load
balancer), but its session is handled by the replica holding the lease. The
receiving replica appends the message to the owner's Redis stream; the owner
reads it through a consumer group and acknowledges it once handled. Streams,
not pub/sub, because a message must survive its receiver being down:

- an entry read but not acknowledged stays pending in the group, and a new
  ``ReplicaMailbox`` with the same replica id (after a restart) delivers this
  replica's pending entries again before any new one;
- ``claim_from(dead)`` moves every entry left in a dead replica's stream, read
  or not, into this replica's own stream in one Lua script, so all that a
  replica must still handle is always in its own stream: a claimer that dies
  in turn is claimed from like any other, and nothing is handled twice by two
  live replicas.

- ``hand_over(successor)``: a replica stopping gracefully moves every entry of
  its own stream, read or not, to a live replica's stream, which serves them at
  once instead of after its next claim round.

An acknowledged entry is deleted at once (``XACK`` + ``XDEL`` in one
transaction); ``MAXLEN ~`` bounds a stream whose owner stays away for long.
Payload values are message text: they are logged at DEBUG only.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from redis import exceptions
from redis.asyncio import Redis

from gateway.replicas._common import DEFAULT_PREFIX, make_key, text
from gateway.replicas._errors import guard

__all__ = ["MAX_LEN", "Delivery", "ReplicaMailbox"]

logger = logging.getLogger(__name__)

MAX_LEN = 100_000
"""Entries a replica's stream keeps at most (approximately); older ones are trimmed."""
GROUP = "owner"
"""The one consumer group on each replica's stream; its consumer is the replica."""

# KEYS[1] dead stream, KEYS[2] own stream; ARGV: '' (no clock), group, me, count, maxlen.
# Moves up to count entries, then reads up to count new ones of the own stream.
_CLAIM = """
local group, me, count = ARGV[2], ARGV[3], tonumber(ARGV[4])
local entries = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', count)
for _, e in ipairs(entries) do
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[5], '*', unpack(e[2]))
  redis.call('XDEL', KEYS[1], e[1])
end
if #entries > 0 and redis.call('XLEN', KEYS[1]) == 0 then redis.call('DEL', KEYS[1]) end
redis.pcall('XGROUP', 'CREATE', KEYS[2], group, '0', 'MKSTREAM')
local got = redis.call('XREADGROUP', 'GROUP', group, me, 'COUNT', count, 'STREAMS', KEYS[2], '>')
return {#entries, got}
"""

# KEYS[1] own stream, KEYS[2] successor's stream; ARGV: count, maxlen.
# Moves up to count entries (read or not) in order; returns how many.
_HAND_OVER = """
local count = tonumber(ARGV[1])
local entries = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', count)
for _, e in ipairs(entries) do
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', unpack(e[2]))
  redis.call('XDEL', KEYS[1], e[1])
end
if redis.call('XLEN', KEYS[1]) == 0 then redis.call('DEL', KEYS[1]) end
return #entries
"""

Entry = tuple[str, dict[str, str] | None]


@dataclass(frozen=True, slots=True)
class Delivery:
    """One message from the mailbox; ``ack(id)`` once it has been handled."""

    id: str
    payload: dict[str, str]


def _id_key(entry_id: str) -> tuple[int, int]:
    ms_part, _, seq = entry_id.partition("-")
    return int(ms_part), int(seq or 0)


def _fields(raw: object) -> dict[str, str] | None:
    if isinstance(raw, dict):
        return {text(k): text(v) for k, v in raw.items()}
    if isinstance(raw, list | tuple) and raw:
        flat = [text(x) for x in raw]
        return dict(zip(flat[::2], flat[1::2], strict=True))
    return None


def _entries(reply: object) -> list[Entry]:
    """Entries of an XREADGROUP reply: RESP2, RESP3 or raw from a script."""
    streams: list[object] = []
    if isinstance(reply, dict):
        for value in reply.values():  # RESP3: {stream: [entries]}
            streams.extend(value if value and isinstance(value[0], list) else [value])
    elif isinstance(reply, list):
        streams = [item[1] for item in reply]  # [[stream, entries], ...]
    found: list[Entry] = []
    for entries in streams:
        assert isinstance(entries, list | tuple)
        for entry_id, raw in entries:
            found.append((text(entry_id), _fields(raw)))
    return found


class ReplicaMailbox:
    """This replica's stream (``receive``/``ack``/``claim_from``) and others' (``send``).

    A blocking ``receive`` holds one connection of the client for ``block_ms``: give
    the client a ``socket_timeout`` longer than that (or none).
    """

    def __init__(self, client: Redis, replica_id: str, *, prefix: str = DEFAULT_PREFIX) -> None:
        if not replica_id:
            raise ValueError("replica_id must not be empty")
        self._client = client
        self.replica_id = replica_id
        self._prefix = prefix
        self._stream = self._stream_of(replica_id)
        self._claim = client.register_script(_CLAIM)
        self._hand_over = client.register_script(_HAND_OVER)
        self._started = False
        self._replay_until: tuple[int, int] | None = None
        self._cursor = "0"

    def _stream_of(self, replica: str) -> str:
        return make_key(self._prefix, "mailbox", replica)

    async def send(self, to_replica: str, payload: dict[str, str]) -> str:
        """Append ``payload`` to ``to_replica``'s stream; returns the entry id."""
        if not payload:
            raise ValueError("a mailbox payload needs at least one field")
        with guard("sending to a replica's mailbox"):
            entry_id = await self._client.xadd(
                self._stream_of(to_replica),
                dict(payload),  # type: ignore[arg-type]  # dict is invariant
                maxlen=MAX_LEN,
                approximate=True,
            )
        logger.debug("sent %s to replica %s", text(entry_id), to_replica)
        return text(entry_id)

    async def depth(self) -> int:
        """Entries in this replica's stream, read or not: what it has not finished with."""
        with guard("counting the replica's mailbox"):
            return int(await self._client.xlen(self._stream))

    async def _start(self) -> None:
        """Create the group; note the last pending entry, which ``receive`` replays up to."""
        with guard("opening the replica's mailbox"):
            await self._create_group()
            summary = await self._client.xpending(self._stream, GROUP)
        last = summary.get("max") if isinstance(summary, dict) else None
        self._replay_until = _id_key(text(last)) if last else None
        self._cursor = "0"
        if self._replay_until is not None:
            logger.info(
                "replica %s has %s pending messages to replay", self.replica_id, summary["pending"]
            )
        self._started = True

    async def _create_group(self) -> None:
        try:
            await self._client.xgroup_create(self._stream, GROUP, id="0", mkstream=True)
        except exceptions.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    async def receive(self, block_ms: int, count: int) -> list[Delivery]:
        """Up to ``count`` messages: first the pending ones of a previous run, then new ones.

        Waits up to ``block_ms`` for a new one (0: answer at once).
        """
        if count <= 0:
            raise ValueError("count must be positive")
        if not self._started:
            await self._start()
        if self._replay_until is not None:
            replayed = await self._replay(count)
            if replayed:
                return replayed
        return await self._deliveries(_entries(await self._read(">", count, block_ms)))

    async def _replay(self, count: int) -> list[Delivery]:
        until = self._replay_until
        assert until is not None
        entries = _entries(await self._read(self._cursor, count, 0))
        if entries:
            self._cursor = entries[-1][0]
        entries = [e for e in entries if _id_key(e[0]) <= until]
        if not entries:
            self._replay_until = None
        return await self._deliveries(entries)

    async def _read(self, cursor: str, count: int, block_ms: int) -> object:
        """One XREADGROUP; a group lost with Redis's data is created again."""
        with guard("reading the replica's mailbox"):
            try:
                return await self._xreadgroup(cursor, count, block_ms)
            except exceptions.ResponseError as exc:
                if "NOGROUP" not in str(exc):
                    raise
            logger.warning("mailbox of replica %s was gone (Redis restarted?)", self.replica_id)
            await self._create_group()
            self._replay_until, self._cursor = None, "0"
            return await self._xreadgroup(cursor, count, block_ms)

    async def _xreadgroup(self, cursor: str, count: int, block_ms: int) -> object:
        return await self._client.xreadgroup(
            GROUP,
            self.replica_id,
            {self._stream: cursor},
            count=count,
            block=block_ms if block_ms > 0 else None,
        )

    async def _deliveries(self, entries: list[Entry]) -> list[Delivery]:
        """Entries as deliveries; ones trimmed away before being handled are acked and logged."""
        found: list[Delivery] = []
        for entry_id, payload in entries:
            if payload:
                found.append(Delivery(entry_id, payload))
            else:
                logger.warning("mailbox entry %s was trimmed before it was handled", entry_id)
                await self.ack(entry_id)
        return found

    async def ack(self, delivery_id: str) -> None:
        """The message was handled: it leaves the pending list and the stream."""
        with guard("acknowledging a mailbox entry"):
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.xack(self._stream, GROUP, delivery_id)
                pipe.xdel(self._stream, delivery_id)
                await pipe.execute()

    async def hand_over(self, successor: str, *, count: int = 1000) -> int:
        """Stopping: move every entry of this replica's stream, handled or not, to the end
        of ``successor``'s stream, in order; returns how many moved. The successor reads
        them at once, like any message routed to it."""
        if successor == self.replica_id:
            raise ValueError("a replica cannot hand its mailbox to itself")
        keys = [self._stream, self._stream_of(successor)]
        total = 0
        while True:
            with guard("handing the replica's mailbox over"):
                moved = int(await self._hand_over(keys=keys, args=[count, MAX_LEN]))
            total += moved
            if moved < count:
                break
        if total:
            logger.info(
                "replica %s handed %d messages to replica %s", self.replica_id, total, successor
            )
        return total

    async def claim_from(self, dead_replica: str, *, count: int = 1000) -> list[Delivery]:
        """Take over every entry left in ``dead_replica``'s stream, handled or not.

        The entries move to this replica's stream; the first ``count`` unread
        entries of it are returned at once (like ``receive``), the rest come
        through ``receive``.
        """
        if dead_replica == self.replica_id:
            raise ValueError("a replica cannot claim from itself")
        if not self._started:
            await self._start()
        keys = [self._stream_of(dead_replica), self._stream]
        args: list[str | int] = ["", GROUP, self.replica_id, count, MAX_LEN]
        found: list[Delivery] = []
        moved_total = 0
        while True:
            with guard("claiming a dead replica's mailbox"):
                moved, reply = await self._claim(keys=keys, args=args)
            moved_total += int(moved)
            found += await self._deliveries(_entries(reply))
            if int(moved) < count:
                break
        if moved_total:
            logger.info(
                "replica %s took %d messages from dead replica %s",
                self.replica_id,
                moved_total,
                dead_replica,
            )
        return found

"""``SessionOwnership``: which sessions this replica owns, and what it owes its mailbox.

The session's lease (Redis, a fencing token) names the replica that runs its
turns. ``owner_of(key)`` asks Redis each time (a lease this replica remembers
may be gone), takes a free lease, or takes over the lease of a replica known
to have stopped (one the registry lost with a Redis wipe is waited out
instead) — after that replica's mailbox has
been claimed (``claimed``: served before anything newer), so the messages it
still owed come first. The same holds for a lease that simply ran out: when
its last holder stopped, its mailbox is claimed before the lease is used.
``claim(key)`` tells the sessions whether this replica may end a session. The
mailbox entries being served are remembered until the inbox settles their
messages (``settled``), so an owner killed mid-turn leaves them in its stream
for whoever claims it.

``fence(key)`` is the check a turn runs before each send, edit and transcript
write: it raises ``FencedError`` once the lease the turn began under is no
longer this replica's; a lost lease is logged once (``lost the lease of session
… to …``). ``hand_over()`` is a graceful stop's last step.

Built before the sessions and the router, from Redis alone: the sessions ask it
who ends a session, the router serves what it routes and claims. It counts its
take-overs and lost leases in the replica's metrics (``ReplicaMetrics``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections.abc import Awaitable, Callable, Collection

from gateway.clock import Clock
from gateway.errors import FencedError
from gateway.events import InboundMessage, SessionKey
from gateway.ops import ReplicaMetrics
from gateway.replicas import Coordination, Delivery, Lease, ReplicaError

__all__ = ["SessionOwnership", "key_of_text", "key_text"]

logger = logging.getLogger(__name__)

OWNER_TRIES = 5
CLAIM_BATCH = 1000


def key_text(key: SessionKey) -> str:
    """A session key as the name of its lease (injective)."""
    return json.dumps([key.platform, key.chat_id, key.user_id, key.thread_id])


def key_of_text(text: str) -> SessionKey:
    platform, chat_id, user_id, thread_id = json.loads(text)
    return SessionKey(platform, chat_id, user_id, thread_id)


class SessionOwnership:
    def __init__(
        self,
        coordination: Coordination,
        clock: Clock,
        *,
        lease_seconds: float,
        metrics: ReplicaMetrics | None = None,
    ) -> None:
        self.coordination = coordination
        self.metrics = metrics if metrics is not None else ReplicaMetrics()
        self.replica_id = coordination.replica_id
        self._clock = clock
        self.interval = lease_seconds / 3
        self._held: dict[str, Lease] = {}
        self._renewed: dict[str, float] = {}
        """When (monotonic, before asking) each held lease was last taken or renewed."""
        self._fresh: set[str] = set()
        """Sessions taken since their last message here: read afresh before serving one."""
        self._routed: dict[str, float] = {}
        self._owed: dict[tuple[str, str], str] = {}
        """``(platform, receipt)`` being served -> its mailbox entry, acknowledged when settled."""
        self._claims: dict[str, asyncio.Task[None]] = {}
        self.claimed: asyncio.Queue[Delivery] = asyncio.Queue()
        """Entries taken over from replicas that died, to be served before newer ones."""

    # ------------------------------------------------------------------ owners

    async def owner_of(self, key: str) -> str:
        leases = self.coordination.leases
        for _ in range(OWNER_TRIES):
            asked = time.monotonic()
            lease = await leases.acquire(key)  # ours is extended; one lost is known at once
            if lease is not None:
                await self._owed_first(lease)
                self._hold(lease, asked)
                return self.replica_id
            current = await leases.owner(key)
            self._lost(key, current.owner if current else None)
            if current is None:
                continue  # released meanwhile: try again
            if not await self.coordination.registry.stopped(current.owner):
                return current.owner
            await self.claim_mailbox(current.owner)  # what it owed comes first
            asked = time.monotonic()
            lease = await leases.take_over(key, current.owner)
            if lease is not None:
                self.metrics.took_over("lease")
                self._hold(lease, asked)
                return self.replica_id
        raise ReplicaError(f"could not settle which replica owns session {key}")

    async def route(self, key: str, payload: dict[str, str]) -> str:
        """Send ``payload`` to the mailbox of ``key``'s owner; returns the owner. One round
        trip (``Handoff``) unless a stopped replica is involved: then what it owed is
        claimed first (``owner_of``), as when asked apart."""
        asked = time.monotonic()
        routed = await self.coordination.handoff.route(key, payload)
        if not routed.entry:
            owner = await self.owner_of(key)
            await self.coordination.mailbox.send(owner, payload)
            return owner
        if routed.owner == self.replica_id:
            self._hold(Lease(key, routed.owner, routed.token, routed.previous), asked)
        else:
            self._lost(key, routed.owner)
        return routed.owner

    def holds(self, key: str) -> bool:
        """Whether this replica holds ``key``'s lease and renewed it within ``2/3`` of its
        time (as ``fence`` trusts it): no one else can have taken it since."""
        if key not in self._held:
            return False
        return time.monotonic() - self._renewed.get(key, -math.inf) < 2 * self.interval

    async def _owed_first(self, lease: Lease) -> None:
        """A lease taken after it ran out: when its holder stopped, what that replica still
        owed (the session's earlier messages among them) is claimed before this replica
        serves anything newer of the session."""
        previous = lease.previous
        if previous is None or previous == self.replica_id:
            return
        if await self.coordination.registry.stopped(previous):
            await self.claim_mailbox(previous)

    def _hold(self, lease: Lease, asked: float) -> None:
        held = self._held.get(lease.session)
        if held is None or held.token != lease.token:
            self._fresh.add(lease.session)  # new, or taken again after another held it
        self._held[lease.session] = lease
        self._renewed[lease.session] = asked

    def _lost(self, key: str, to: str | None) -> bool:
        """Another replica holds ``key``'s lease now (or nobody): forget ours, say so once."""
        if self._held.pop(key, None) is None:
            return False
        self._fresh.discard(key)
        self._renewed.pop(key, None)
        self.metrics.lease_lost()
        logger.warning("lost the lease of session %s to %s", key, to or "no replica yet")
        return True

    def leases_held(self) -> int:
        """How many session leases this replica holds now."""
        return len(self._held)

    # ------------------------------------------------------------------ fencing

    def fence(self, key: SessionKey) -> Callable[[], Awaitable[None]]:
        """A check for one turn of ``key``'s session, run before each of its sends, edits
        and transcript writes: it raises ``FencedError`` once the lease the turn began
        under is no longer this replica's. Within ``2/3`` of the lease's time since its
        last renewal it answers at once; past that (the process stalled) it asks Redis."""
        text = key_text(key)
        begun = self._held.get(text)
        token = begun.token if begun is not None else None

        async def check() -> None:
            await self._check(text, token)

        return check

    async def _check(self, key: str, token: int | None) -> None:
        lease = self._held.get(key)
        if lease is None or (token is not None and lease.token != token):
            raise FencedError(f"replica {self.replica_id} no longer holds session {key}")
        asked = time.monotonic()
        if asked - self._renewed.get(key, 0.0) < 2 * self.interval:
            return
        try:
            renewed = await self.coordination.leases.renew(lease)
        except ReplicaError as exc:  # unknown: refuse, the lease may be another's by now
            raise FencedError(f"cannot confirm the lease of session {key} ({exc})") from exc
        if renewed:
            self._renewed[key] = asked
            return
        current = await self.coordination.leases.owner(key)
        self._lost(key, current.owner if current else None)
        raise FencedError(f"replica {self.replica_id} lost session {key}")

    async def claim(self, key: SessionKey) -> bool:
        """Whether this replica holds, or could take, the session (to end it)."""
        try:
            return await self.owner_of(key_text(key)) == self.replica_id
        except ReplicaError as exc:
            logger.warning("cannot tell who ends a session now (%s)", exc)
            return False

    def routed(self, key: str) -> None:
        """A message of ``key``'s session was just routed (its lease is kept a while)."""
        self._routed[key] = self._clock.monotonic()

    def take_fresh(self, key: str) -> bool:
        """True once after the session was taken here: it must be read afresh."""
        if key in self._fresh:
            self._fresh.discard(key)
            return True
        return False

    # ------------------------------------------------------------------ owed entries

    def owes(self, platform: str, receipt: str) -> bool:
        return (platform, receipt) in self._owed

    def owe(self, msg: InboundMessage, entry: str) -> None:
        """``msg``'s deliveries are being served from the mailbox entry ``entry``."""
        for receipt in msg.receipts:
            self._owed[(msg.platform, receipt)] = entry

    async def settled(self, batch: list[InboundMessage]) -> None:
        """The inbox settled these messages: their mailbox entries are done."""
        ids = {
            entry
            for m in batch
            for r in m.receipts
            if (entry := self._owed.pop((m.platform, r), None)) is not None
        }
        for entry in ids:
            try:
                await self.coordination.mailbox.ack(entry)
            except ReplicaError as exc:  # it will be served again and dropped as settled
                logger.warning("could not acknowledge a mailbox entry (%s)", exc)

    # ------------------------------------------------------------------ dead replicas

    async def claim_mailbox(self, dead: str) -> None:
        """Take what ``dead`` still owed into ``claimed``, once at a time."""
        task = self._claims.get(dead)
        if task is None:
            task = asyncio.create_task(self._claim_now(dead))
            self._claims[dead] = task
            task.add_done_callback(lambda _: self._claims.pop(dead, None))
        await asyncio.shield(task)

    async def _claim_now(self, dead: str) -> None:
        total = 0
        while True:
            taken = await self.coordination.mailbox.claim_from(dead, count=CLAIM_BATCH)
            total += len(taken)
            for delivery in taken:
                self.claimed.put_nowait(delivery)
            if len(taken) < CLAIM_BATCH:
                break
        first = await self.coordination.registry.forget(dead)
        if first or total:  # a later look at a mailbox already taken over is no take-over
            self.metrics.took_over("mailbox")
            logger.info("replica %s stopped; took over its mailbox (%d entries)", dead, total)

    # ------------------------------------------------------------------ upkeep

    async def renew(
        self, busy: Collection[str], is_open: Callable[[SessionKey], bool]
    ) -> list[SessionKey]:
        """Renew the leases; give up those of sessions idle here and no longer open.
        Returns the sessions whose lease was lost: their turns must stop at once."""
        leases = self.coordination.leases
        asked = time.monotonic()
        held = list(self._held.values())
        lost = await leases.renew_all(held)
        gone = {lease.session for lease in lost}
        for lease in held:
            if lease.session not in gone and self._held.get(lease.session) is lease:
                self._renewed[lease.session] = asked
        stopped: list[SessionKey] = []
        for lease in lost:
            if self._held.get(lease.session) is not lease:
                continue  # taken again meanwhile
            current = await leases.owner(lease.session)
            if self._lost(lease.session, current.owner if current else None):
                stopped.append(key_of_text(lease.session))
        recent = self._clock.monotonic() - 3 * self.interval
        for key, lease in list(self._held.items()):
            idle = key not in busy and self._routed.get(key, -math.inf) < recent
            if idle and not is_open(key_of_text(key)):
                del self._held[key]
                self._routed.pop(key, None)
                self._fresh.discard(key)
                self._renewed.pop(key, None)
                await leases.release(lease)
        return stopped

    async def hand_over(self) -> None:
        """Stopping: hand the mailbox and the leases over, so others serve at once.

        First this replica leaves the registry (others now see it stopped and take
        over its leases on their next message), then its stream goes to a live
        replica, whose routes find these sessions' messages ahead of any newer one;
        the leases go last. Whatever is routed here meanwhile is claimed by the
        others' upkeep, as from any replica that stopped."""
        coordination = self.coordination
        try:
            await coordination.registry.leave()
            others = sorted(await coordination.registry.alive() - {self.replica_id})
            if others:
                await coordination.mailbox.hand_over(others[0])
            for lease in list(self._held.values()):
                await coordination.leases.release(lease)
        except ReplicaError as exc:
            logger.warning("could not hand the mailbox and leases over (%s)", exc)
        self._held.clear()

"""Several gateway replicas: each session's messages go to the one replica that owns it.

With ``redis.url`` and ``database.url`` set, any replica may receive any
delivery (a Telegram webhook behind a load balancer, a Slack event). The
adapter records it in the shared inbox (PostgreSQL: a retry to another replica
is recognised there), acknowledges it, and hands the message to
``ReplicaRouter.route``:

1. **owner.** The session's lease (Redis, a fencing token) names the replica
   that runs its turns. A free lease is taken; a lease of a replica that left
   the registry (it died) is taken over — after that replica's mailbox has been
   claimed, so the messages it still owed come first.
2. **mailbox.** The message goes to the owner's stream, also when the owner is
   this replica, so one stream orders each session's messages. The owner
   serves its stream one message at a time per session, in stream order, into
   the normal intake (``GatewayRunner.handle``); an entry is acknowledged when
   the inbox settles its delivery (answered, refused, …), so an owner killed
   mid-turn leaves it in its stream for whoever claims it, and the answer is
   finished in the messages it had streamed (``shown``).
3. **exactly once.** A copy of a delivery that is being served, or is settled,
   is dropped by the owner (two replicas may route the same orphan).
4. **orphans.** A delivery recorded but never routed (its replica died in
   between, or Redis was down) is routed by another replica after
   ``gateway.orphan_seconds``.
5. **ending.** Only the holder of a session's lease ends it (``SharedSessions``);
   a replica releases the leases of sessions it no longer has.

Every ``lease_seconds / 3`` the replica beats its heartbeat, renews its leases
and claims the mailbox of any replica that stopped beating.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from dataclasses import replace

from gateway.clock import Clock
from gateway.events import InboundMessage, SessionKey, message_from_json, message_to_json
from gateway.replicas import Coordination, Delivery, Lease, ReplicaError
from gateway.runner import GatewayRunner
from gateway.sessions import Inbox, SharedSessions

__all__ = ["ReplicaRouter", "key_text"]

logger = logging.getLogger(__name__)

RECEIVE_BLOCK_MS = 1000
RECEIVE_COUNT = 100
OWNER_TRIES = 5


def key_text(key: SessionKey) -> str:
    """A session key as the name of its lease (injective)."""
    return json.dumps([key.platform, key.chat_id, key.user_id, key.thread_id])


def key_of_text(text: str) -> SessionKey:
    platform, chat_id, user_id, thread_id = json.loads(text)
    return SessionKey(platform, chat_id, user_id, thread_id)


class ReplicaRouter:
    def __init__(
        self,
        coordination: Coordination,
        runner: GatewayRunner,
        sessions: SharedSessions,
        inbox: Inbox,
        clock: Clock,
        *,
        lease_seconds: float,
        orphan_seconds: float,
    ) -> None:
        self.coordination = coordination
        self.replica_id = coordination.replica_id
        self._runner = runner
        self._sessions = sessions
        self._inbox = inbox
        self._clock = clock
        self._interval = lease_seconds / 3
        self._orphan_seconds = orphan_seconds
        self._held: dict[str, Lease] = {}
        self._fresh: set[str] = set()
        """Sessions taken since their last message here: read afresh before serving one."""
        self._routed: dict[str, float] = {}
        self._chains: dict[str, asyncio.Task[None]] = {}
        self._owed: dict[tuple[str, str], str] = {}
        """``(platform, receipt)`` being served -> its mailbox entry, acknowledged when settled."""
        self._claims: dict[str, asyncio.Task[None]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self.healthy = False
        sessions.claim = self.claim
        if runner.inbox is not None:
            runner.inbox.on_settled.append(self.settled)

    # ------------------------------------------------------------------ lifecycle

    def attach(self, accepting: Callable[[], bool]) -> None:
        """Adapters hand their messages here; their webhooks answer 503 while Redis is
        unreachable or ``accepting()`` is false (shutting down)."""
        self._runner.resume_inbox = False  # what the inbox holds is handed on instead
        for adapter in self._runner.adapters.values():
            adapter.set_handler(self.route)
            adapter.set_intake_gate(lambda: self.healthy and accepting())

    async def start(self) -> None:
        await self.coordination.registry.heartbeat()
        self.healthy = True
        self._tasks = [
            asyncio.create_task(self._consume(), name="replica-mailbox"),
            asyncio.create_task(self._keep(), name="replica-keep"),
            asyncio.create_task(self._sweep(), name="replica-sweep"),
        ]
        logger.info("replica %s serving its mailbox", self.replica_id)

    async def stop(self) -> None:
        """Stop serving; give the leases up; leave, so others claim what is left at once."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        with contextlib.suppress(ReplicaError):
            for lease in list(self._held.values()):
                await self.coordination.leases.release(lease)
            await self.coordination.registry.leave()
        self._held.clear()
        await self.coordination.aclose()

    # ------------------------------------------------------------------ intake

    async def route(self, msg: InboundMessage) -> None:
        """Hand ``msg`` to the mailbox of its session's owner (adapters call this)."""
        key = key_text(self._sessions.key_for(msg))
        owner = await self._owner_of(key)
        self._routed[key] = self._clock.time()
        await self.coordination.mailbox.send(owner, {"key": key, "msg": message_to_json(msg)})
        if msg.receipts:
            await asyncio.to_thread(self._inbox.routed, msg.platform, list(msg.receipts))

    async def _owner_of(self, key: str) -> str:
        leases = self.coordination.leases
        for _ in range(OWNER_TRIES):
            held = self._held.get(key)
            if held is not None:
                return self.replica_id
            lease = await leases.acquire(key)
            if lease is not None:
                self._hold(lease)
                return self.replica_id
            current = await leases.owner(key)
            if current is None:
                continue  # released meanwhile: try again
            if await self.coordination.registry.is_alive(current.owner):
                return current.owner
            await self.claim_mailbox(current.owner)  # what it owed comes first
            lease = await leases.take_over(key, current.owner)
            if lease is not None:
                self._hold(lease)
                return self.replica_id
        raise ReplicaError(f"could not settle which replica owns session {key}")

    def _hold(self, lease: Lease) -> None:
        if lease.session not in self._held:
            self._fresh.add(lease.session)
        self._held[lease.session] = lease

    async def claim(self, key: SessionKey) -> bool:
        """Whether this replica holds, or could take, the session (to end it)."""
        try:
            return await self._owner_of(key_text(key)) == self.replica_id
        except ReplicaError as exc:
            logger.warning("cannot tell who ends a session now (%s)", exc)
            return False

    # ------------------------------------------------------------------ serving

    async def _consume(self) -> None:
        mailbox = self.coordination.mailbox
        while True:
            try:
                deliveries = await mailbox.receive(RECEIVE_BLOCK_MS, RECEIVE_COUNT)
            except ReplicaError as exc:
                self.healthy = False
                logger.warning("replica mailbox unreachable (%s); retrying", exc)
                await asyncio.sleep(1.0)
                continue
            for delivery in deliveries:
                self._dispatch(delivery)

    def _dispatch(self, delivery: Delivery) -> None:
        """Serve ``delivery`` after the ones of its session before it."""
        key = delivery.payload.get("key", "")
        before = self._chains.get(key)
        task = asyncio.create_task(self._serve(before, delivery))
        self._chains[key] = task

        def done(finished: asyncio.Task[None]) -> None:
            if self._chains.get(key) is finished:
                del self._chains[key]

        task.add_done_callback(done)

    async def _serve(self, before: asyncio.Task[None] | None, delivery: Delivery) -> None:
        if before is not None:
            await asyncio.wait([before])
        try:
            await self._serve_one(delivery)
        except Exception:
            logger.exception("serving a message of the replica mailbox failed")

    async def _serve_one(self, delivery: Delivery) -> None:
        mailbox = self.coordination.mailbox
        key = delivery.payload.get("key", "")
        try:
            msg = message_from_json(delivery.payload["msg"])
        except (KeyError, ValueError, TypeError) as exc:
            logger.warning("dropped an unreadable mailbox entry (%s)", type(exc).__name__)
            await mailbox.ack(delivery.id)
            return
        owner = await self._owner_of(key)
        if owner != self.replica_id:  # claimed from a dead replica, or a lease lost
            await mailbox.send(owner, dict(delivery.payload))
            await mailbox.ack(delivery.id)
            return
        if msg.receipts:
            first = (msg.platform, msg.receipts[0])
            found = await asyncio.to_thread(self._inbox.delivery, *first)
            if found is None or found[1] or first in self._owed:
                logger.debug("a %s delivery came again; not served twice", msg.platform)
                await mailbox.ack(delivery.id)
                return
            msg = replace(msg, resume=found[0].shown)
            for receipt in msg.receipts:
                self._owed[(msg.platform, receipt)] = delivery.id
        if key in self._fresh:
            self._fresh.discard(key)
            await self._sessions.adopt(msg)
        await self._runner.handle(msg)
        if not msg.receipts:
            await mailbox.ack(delivery.id)

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

    async def claim_mailbox(self, dead: str) -> None:
        """Take what ``dead`` still owed into this replica's mailbox, once at a time."""
        task = self._claims.get(dead)
        if task is None:
            task = asyncio.create_task(self._claim_now(dead))
            self._claims[dead] = task
            task.add_done_callback(lambda _: self._claims.pop(dead, None))
        await asyncio.shield(task)

    async def _claim_now(self, dead: str) -> None:
        total = 0
        while True:
            taken = await self.coordination.mailbox.claim_from(dead)
            total += len(taken)
            for delivery in taken:
                self._dispatch(delivery)
            if len(taken) < 1000:
                break
        await self.coordination.registry.forget(dead)
        logger.info("replica %s stopped; took over its mailbox (%d entries)", dead, total)

    # ------------------------------------------------------------------ upkeep

    async def _keep(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            try:
                await self.coordination.registry.heartbeat()
                self.healthy = True
                await self._renew()
                for dead in await self.coordination.registry.dead():
                    await self.claim_mailbox(dead)
            except ReplicaError as exc:
                self.healthy = False
                logger.warning("replica upkeep failed (%s); retrying", exc)
            except Exception:
                logger.exception("replica upkeep failed")

    async def _renew(self) -> None:
        leases = self.coordination.leases
        for lost in await leases.renew_all(list(self._held.values())):
            self._held.pop(lost.session, None)
            self._fresh.discard(lost.session)
        recent = self._clock.time() - 3 * self._interval
        for key, lease in list(self._held.items()):
            idle = key not in self._chains and self._routed.get(key, 0.0) < recent
            if idle and not self._sessions.is_open(key_of_text(key)):
                del self._held[key]
                self._routed.pop(key, None)
                self._fresh.discard(key)
                await leases.release(lease)

    async def _sweep(self) -> None:
        """Take up open sessions nobody has, and deliveries nobody handed on."""
        while True:
            await asyncio.sleep(self._orphan_seconds / 2)
            try:
                await self._sessions.sweep()
                await self._route_orphans()
            except Exception as exc:
                logger.warning("replica sweep failed (%s); retrying", type(exc).__name__)

    async def _route_orphans(self) -> None:
        before = self._clock.time() - self._orphan_seconds
        for row in await asyncio.to_thread(self._inbox.unrouted, before):
            adapter = self._runner.adapters.get(row.platform)
            if adapter is None:
                continue
            msg = await adapter.read_again(row.payload)
            if msg is None:
                await asyncio.to_thread(self._inbox.done, row.platform, [row.receipt])
                continue
            logger.info("handing on a %s delivery its replica did not", row.platform)
            await self.route(replace(msg, receipts=(row.receipt,)))

"""Several gateway replicas: each session's messages go to the one replica that owns it.

With ``redis.url`` and ``database.url`` set, any replica may receive any
delivery (a Telegram webhook behind a load balancer, a Slack event). The
adapter records it in the shared inbox (PostgreSQL: a retry to another replica
is recognised there), acknowledges it, and hands the message to
``ReplicaRouter.route``:

1. **owner.** The session's lease names the replica that runs its turns
   (``SessionOwnership``: a free lease is taken, a dead replica's taken over
   after its mailbox was claimed, so the messages it still owed come first).
2. **mailbox.** The message goes to the owner's stream, also when the owner is
   this replica, so one stream orders each session's messages. The owner
   serves its stream one message at a time per session, in stream order, into
   the normal intake (``serve``: ``GatewayRunner.handle``); an entry is acknowledged when
   the inbox settles its delivery (answered, refused, …), so an owner killed
   mid-turn leaves it in its stream for whoever claims it, and the answer is
   finished in the messages it had streamed (``shown``), on its own: the
   messages queued behind it are answered after it (``next_turn``). One half
   answer, or one noted answer, of several messages is finished once
   (``HalfAnswers``). A deleted or edited message goes the same way to the owner
   of the session that stored it (``RetractionRoutes``).
3. **exactly once.** A copy of a delivery that is being served, or is settled,
   is dropped by the owner (two replicas may route the same orphan).
4. **orphans.** A delivery recorded but never routed (its replica died in
   between, or Redis was down) is routed by another replica after
   ``gateway.orphan_seconds``.
5. **ending.** Only the holder of a session's lease ends it (``SharedSessions``);
   a replica releases the leases of sessions it no longer has.
6. **order.** A session's messages are routed one at a time, in the order they
   came; one whose route fails (Redis unreachable) is held and goes before the
   session's next one. A broken pooled connection (Redis restarted) is replaced
   at once (``Coordination``). A session whose owner died is served here only
   after that owner's mailbox was claimed, also when its lease simply ran out,
   so nothing newer overtakes what the dead owner still owed.
7. **stopping.** A stopping replica stops reading its mailbox, lets its turns
   finish, leaves the registry, hands its stream to a live replica and gives its
   leases up, so those messages are served at once, in order.
8. **fencing.** A turn checks its session's lease before each send, edit and
   transcript write (``SessionOwnership.fence``); a replica that finds a lease
   lost (it stalled past it) stops that session's turn at once and sends nothing
   more. PostgreSQL refuses transcript writes from an older epoch.

Every ``lease_seconds / 3`` the replica beats its heartbeat, renews its leases
and claims the mailbox of any replica that stopped beating. At start and every
``PRUNE_INTERVAL`` it forgets old settled deliveries (``Inbox.prune``), as a
single process does at start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from gateway.adapters import MessageHandler, Replies
from gateway.app._half_answers import HalfAnswers
from gateway.app._ownership import SessionOwnership, key_text
from gateway.app._retraction_routes import RETRACTION, RetractionRoutes
from gateway.clock import Clock
from gateway.events import InboundMessage, message_from_json, message_to_json
from gateway.ops import ReplicaMetrics
from gateway.replicas import Coordination, Delivery, ReplicaError
from gateway.sessions import Inbox, Retractions, SharedSessions

__all__ = ["ReplicaRouter"]

logger = logging.getLogger(__name__)

RECEIVE_BLOCK_MS = 1000
RECEIVE_COUNT = 100
PRUNE_INTERVAL = 3600.0
"""Seconds between two prunings of the shared inbox by one replica."""


@dataclass(eq=False)
class _Routing:
    """One session's routes on this replica: one at a time, held ones first."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    held: list[InboundMessage] = field(default_factory=list)
    """Messages whose route failed (Redis unreachable), oldest first."""
    users: int = 0

    def enter(self) -> None:
        self.users += 1

    def leave(self) -> bool:
        """True when nobody routes the session now and nothing of it is held."""
        self.users -= 1
        return not self.users and not self.held

    def hold(self, msg: InboundMessage) -> None:
        self.held.append(msg)

    def routed_first(self) -> None:
        self.held.pop(0)


class ReplicaRouter:
    def __init__(
        self,
        coordination: Coordination,
        ownership: SessionOwnership,
        sessions: SharedSessions,
        inbox: Inbox,
        replies: Replies,
        clock: Clock,
        *,
        serve: MessageHandler,
        retractions: Retractions,
        accepting: Callable[[], bool],
        orphan_seconds: float,
        metrics: ReplicaMetrics | None = None,
    ) -> None:
        self.coordination = coordination
        self.metrics = metrics if metrics is not None else ownership.metrics
        self.replica_id = coordination.replica_id
        self.ownership = ownership
        self._serve_msg = serve
        self.retractions = RetractionRoutes(coordination, ownership, sessions, retractions)
        """Deleted and edited messages, to their session's owner (adapters call ``take``)."""
        self._accepting = accepting
        self._sessions = sessions
        self._inbox = inbox
        self._replies = replies
        self._clock = clock
        self._orphan_seconds = orphan_seconds
        self._chains: dict[str, asyncio.Task[None]] = {}
        self._routing: dict[str, _Routing] = {}
        """Sessions being routed here, with the messages whose route failed."""
        self._tasks: list[asyncio.Task[None]] = []
        self._half_answers = HalfAnswers()
        """What dead owners left shown, finished once per session."""
        self._pruned_at: float | None = None
        self.healthy = False

    # ------------------------------------------------------------------ lifecycle

    def accepting(self) -> bool:
        """Whether adapters may take deliveries: Redis reachable and not shutting down
        (webhooks answer 503 otherwise, so the platform delivers again later)."""
        return self.healthy and self._accepting()

    async def start(self) -> None:
        await self.coordination.registry.heartbeat()
        await self._prune()
        self.healthy = True
        self._tasks = [
            asyncio.create_task(self._consume(), name="replica-mailbox"),
            asyncio.create_task(self._keep(), name="replica-keep"),
            asyncio.create_task(self._sweep(), name="replica-sweep"),
            asyncio.create_task(self._serve_claimed(), name="replica-claimed"),
        ]
        logger.info("replica %s serving its mailbox", self.replica_id)

    async def stop(self) -> None:
        """Stop serving; hand the mailbox and the leases over to the other replicas."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        await self.ownership.hand_over()
        await self.coordination.aclose()

    # ------------------------------------------------------------------ intake

    async def route(self, msg: InboundMessage) -> None:
        """Hand ``msg`` to the mailbox of its session's owner (adapters call this).

        A session's messages are routed one at a time, in the order they came. One
        that could not be routed (Redis unreachable) is held here and goes before
        the session's next one, so no later message overtakes it; ``_keep`` tries
        the held ones again each round (and the orphan sweep of any replica is the
        last resort, should this one die meanwhile).
        """
        await self._route_in_order(key_text(self._sessions.key_for(msg)), msg)

    async def _route_in_order(self, key: str, msg: InboundMessage | None) -> None:
        """Route the session's held messages, then ``msg``; what fails stays held."""
        routing = self._routing.get(key)
        if routing is None:
            routing = self._routing[key] = _Routing()
        routing.enter()
        try:
            async with routing.lock:
                if msg is not None:
                    routing.hold(msg)
                while routing.held:
                    await self._route_now(key, routing.held[0])
                    routing.routed_first()
        finally:
            if routing.leave():
                del self._routing[key]

    async def _route_held(self) -> None:
        """Route the messages held after a failed route, each session's in order."""
        for key in [k for k, r in self._routing.items() if r.held and not r.users]:
            with contextlib.suppress(ReplicaError):  # still held: next round
                await self._route_in_order(key, None)

    async def _route_now(self, key: str, msg: InboundMessage) -> None:
        self.ownership.routed(key)
        await self.ownership.route(key, {"key": key, "msg": message_to_json(msg)})
        if msg.receipts:
            await asyncio.to_thread(self._inbox.routed, msg.platform, list(msg.receipts))

    # ------------------------------------------------------------------ serving

    async def _consume(self) -> None:
        mailbox = self.coordination.mailbox
        down = False
        while True:
            if not self._accepting():  # stopping: what is unread goes to the successor
                await self._clock.sleep(0.1)
                continue
            try:
                deliveries = await mailbox.receive(RECEIVE_BLOCK_MS, RECEIVE_COUNT)
            except ReplicaError as exc:
                self.healthy = False
                logger.warning("replica mailbox unreachable (%s); retrying", exc)
                await self._clock.sleep(1.0)
                down = True
                continue
            if down:  # Redis is back (maybe empty): be seen alive again, take deliveries
                down = not await self._beat()
            self._dispatch_claimed()  # what a dead replica owed goes before anything newer
            for delivery in deliveries:
                self._dispatch(delivery)

    async def _serve_claimed(self) -> None:
        claimed = self.ownership.claimed
        while True:
            self._dispatch(await claimed.get())
            self._dispatch_claimed()

    def _dispatch_claimed(self) -> None:
        claimed = self.ownership.claimed
        while not claimed.empty():
            self._dispatch(claimed.get_nowait())

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
        if RETRACTION in delivery.payload:
            await self.retractions.serve(delivery)
            return
        mailbox = self.coordination.mailbox
        key = delivery.payload.get("key", "")
        try:
            msg = message_from_json(delivery.payload["msg"])
        except (KeyError, ValueError, TypeError) as exc:
            logger.warning("dropped an unreadable mailbox entry (%s)", type(exc).__name__)
            await mailbox.ack(delivery.id)
            return
        # a lease held and fresh is this replica's still: no need to ask Redis again
        owner = self.replica_id if self.ownership.holds(key) else await self.ownership.owner_of(key)
        if owner != self.replica_id:  # claimed from a dead replica, or a lease lost
            await mailbox.send(owner, dict(delivery.payload))
            await mailbox.ack(delivery.id)
            self.metrics.handed_on("message")
            return
        if msg.receipts:
            first = (msg.platform, msg.receipts[0])
            found = await asyncio.to_thread(self._inbox.delivery, *first)
            if found is None or found[1] or self.ownership.owes(*first):
                logger.debug("a %s delivery came again; not served twice", msg.platform)
                await mailbox.ack(delivery.id)
                return
            resume = self._half_answers.take(key, found[0].shown, found[0].answer)
            msg = replace(msg, resume=resume or ())
            if found[0].answer is not None:  # finished and noted before its owner died
                await self._deliver_noted(msg, found[0].answer, given=resume is None)
                await mailbox.ack(delivery.id)
                return
            self.ownership.owe(msg, delivery.id)
        if self.ownership.take_fresh(key):
            await self._sessions.adopt(msg)
        await self._serve_msg(msg)
        if not msg.receipts:
            await mailbox.ack(delivery.id)

    async def _deliver_noted(self, msg: InboundMessage, answer: str, *, given: bool) -> None:
        """An answer a dead owner noted before delivering it: given in the messages it
        had shown (or anew), never asked of the model again, once for all the messages
        it answers (``given``: an earlier one of them gave it); then settled."""
        if not given:
            logger.info("delivering again a %s answer its dead owner had noted", msg.platform)
            await self._replies.conclude(msg, answer)
        await asyncio.to_thread(self._inbox.done, msg.platform, list(msg.receipts))

    # ------------------------------------------------------------------ upkeep

    async def _beat(self) -> bool:
        try:
            await self.coordination.registry.heartbeat()
        except ReplicaError:
            return False
        self.healthy = True
        logger.info("replica %s reaches Redis again", self.replica_id)
        return True

    async def _keep(self) -> None:
        while True:
            await self._clock.sleep(self.ownership.interval)
            try:
                await self.coordination.registry.heartbeat()
                self.healthy = True
                for lost in await self.ownership.renew(self._chains, self._sessions.is_open):
                    self._sessions.lost(lost)
                await self._route_held()
                for dead in await self.coordination.registry.dead():
                    await self.ownership.claim_mailbox(dead)
            except ReplicaError as exc:
                self.healthy = False
                logger.warning("replica upkeep failed (%s); retrying", exc)
            except Exception:
                logger.exception("replica upkeep failed")

    async def _sweep(self) -> None:
        """Take up open sessions nobody has, and deliveries nobody handed on."""
        while True:
            await self._clock.sleep(self._orphan_seconds / 2)
            try:
                await self._sessions.sweep()
                await self._route_orphans()
            except Exception as exc:
                logger.warning("replica sweep failed (%s); retrying", type(exc).__name__)
            if (
                self._pruned_at is None
                or self._clock.monotonic() - self._pruned_at >= PRUNE_INTERVAL
            ):
                await self._prune()

    async def _prune(self) -> None:
        """Forget old settled deliveries in the shared inbox (it would grow for ever)."""
        try:
            removed = await asyncio.to_thread(self._inbox.prune)
        except Exception as exc:
            logger.warning("pruning the inbox failed (%s); trying again later", exc)
            return
        self._pruned_at = self._clock.monotonic()
        if removed:
            logger.info("forgot %d old deliveries in the inbox", removed)

    async def _route_orphans(self) -> None:
        before = self._clock.time() - self._orphan_seconds
        for row in await asyncio.to_thread(self._inbox.unrouted, before):
            adapter = self._replies.adapter(row.platform)
            if adapter is None:
                continue
            msg = await adapter.read_again(row.payload)
            if msg is None:
                await asyncio.to_thread(self._inbox.done, row.platform, [row.receipt])
                continue
            logger.info("handing on a %s delivery its replica did not", row.platform)
            await self.route(replace(msg, receipts=(row.receipt,)))
            self.metrics.handed_on("orphan")

"""Builds the gateway's parts from settings, for `chorus gateway`, `chorus console` and tests.

Everything is wired here, at construction; reading ``open_stack`` tells who does
what. A message goes adapters → ``Intake`` → runner (intake) → sessions (queue
→ turn) → agent → memory, and every reply comes back down through one
``Replies``. Several replicas (``redis.url`` and ``database.url`` both set) are
other implementations of the same small protocols: the adapters hand their
messages to the ``ReplicaRouter`` instead of the runner, the rate check is
shared, ending a session needs its lease.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable

from agent.llm import LLMClient, Sleep
from gateway import logs
from gateway.access import (
    Authorizer,
    Deduplicator,
    GatewayDB,
    LocalRateCheck,
    PairingRequests,
    RateLimiter,
    admin_checker,
)
from gateway.adapters import BaseAdapter, Intake, Replies
from gateway.app._agents import AgentFactory
from gateway.app._background import start_background
from gateway.app._gateway_stack import GatewayStack
from gateway.app._ownership import SessionOwnership
from gateway.app._replica import ReplicaRouter
from gateway.app._replicas import SharedRateCheck, TelegramBudgets, open_coordination
from gateway.app._services import GatewayServices
from gateway.app._tools import build_tools
from gateway.app._tracing import start_tracing
from gateway.app._voice import open_voice
from gateway.budgets import open_meter
from gateway.clock import Clock, SystemClock
from gateway.commands import (
    ApprovalDesk,
    CommandRegistry,
    ExportDesk,
    LinkDesk,
    PairingDesk,
    SecretDesk,
    open_secret_store,
    provider_merger,
    register_admin_commands,
    register_user_commands,
)
from gateway.config import LiveSettings, Settings, database_location, load_settings
from gateway.media import MediaReader
from gateway.ops import Activity, Metrics
from gateway.runner import GatewayRunner
from gateway.sessions import (
    Inbox,
    InboxKeeper,
    Retractions,
    SessionManager,
    SharedSessions,
    TurnRunner,
)
from memory import log_content
from memory.approvals import ApprovalStore
from memory.people import PeopleStore
from memory.store import StagedWrites
from memory.transcripts import AsyncSessionDB

logger = logging.getLogger(__name__)


def command_registry() -> CommandRegistry:
    """Every built-in command."""
    registry = CommandRegistry()
    register_user_commands(registry)
    register_admin_commands(registry)
    return registry


async def open_stack(
    settings: Settings,
    *,
    clock: Clock | None = None,
    llm_sleep: Sleep | None = None,
    adapters: list[BaseAdapter] | None = None,
    load: Callable[[], Settings] | None = None,
    metrics: Metrics | None = None,
) -> GatewayStack:
    """Every part of a gateway or console process; ``load`` re-reads settings for a reload;
    ``llm_sleep`` replaces the LLM client's waits between retries (tests); ``metrics``
    is given by a caller that serves them before the stack is open."""
    logs.hold_library_loggers(log_content.enabled())  # SDK payloads: DEBUG only with content
    live = LiveSettings(settings)
    clock = clock or SystemClock()
    adapters = adapters or []
    where = database_location(settings)
    db = await AsyncSessionDB.open(where)
    background = await asyncio.to_thread(start_background, live)
    gateway_db = await asyncio.to_thread(GatewayDB, where)
    people = await asyncio.to_thread(PeopleStore, where)
    staging = await asyncio.to_thread(StagedWrites, where)
    inbox = await asyncio.to_thread(Inbox, where, clock)
    metrics = metrics or Metrics(platforms=[adapter.name for adapter in adapters])
    activity = Activity(clock)

    def observe_llm(seconds: float, failed: bool) -> None:
        if failed:
            metrics.llm_error()
        else:
            metrics.observe_llm(seconds)

    def is_admin(key: str) -> bool:
        return admin_checker(live.current.auth.admins)(key)

    # every LLM call is held against its person's budget and written to the ledger
    meter = await asyncio.to_thread(
        open_meter, lambda: live.current, where, is_admin=is_admin, clock=clock.time
    )
    llm = LLMClient(
        settings.llm,
        sleep=llm_sleep or asyncio.sleep,
        observers=[observe_llm],
        meter=meter,
        now=clock.monotonic,
        failovers=[metrics.llm_failover],
        counters=[metrics.llm_call],
    )
    await asyncio.to_thread(start_tracing, settings, gateway_db)
    secrets = await asyncio.to_thread(open_secret_store, settings)
    tools, mcp = build_tools(settings, metrics, secrets=secrets, now=clock.monotonic)

    def audit(actor: str, command: str, args: str, outcome: str) -> None:
        gateway_db.audit(actor, command, args, outcome, clock.time())

    approvals = ApprovalDesk(
        await asyncio.to_thread(ApprovalStore, where),
        live,
        clock,
        {adapter.name: adapter for adapter in adapters},
        audit=audit,
        is_admin=lambda key: admin_checker(live.current.auth.admins)(key),
        several_replicas=settings.database.url is not None and settings.redis.url is not None,
    )
    factory = AgentFactory(
        live,
        db=db,
        llm=llm,
        tools=tools,
        scheduler=background.scheduler,
        provider=background.provider,
        now=clock.time,
        staging=staging,
        audit=audit,
        approver=approvals,
    )
    auth = Authorizer(settings.auth, gateway_db, clock)
    limiter = RateLimiter(settings.auth.rate_limit_per_minute, clock)
    live.subscribe(lambda fresh: auth.reload(fresh.auth))
    live.subscribe(lambda fresh: limiter.reconfigure(fresh.auth.rate_limit_per_minute))
    replicated = settings.database.url is not None and settings.redis.url is not None
    coordination = open_coordination(settings) if replicated else None
    replica_metrics = metrics.set_replica(coordination.replica_id) if coordination else None
    ownership = (
        SessionOwnership(
            coordination,
            clock,
            lease_seconds=settings.gateway.lease_seconds,
            metrics=replica_metrics,
        )
        if coordination is not None
        else None
    )
    replies = Replies(adapters, clock, counted=metrics.message_out)
    voice = await open_voice(live, where, llm, replies, people, clock)
    keeper = InboxKeeper(
        inbox,
        clock,
        lambda: live.current,
        on_settled=ownership.settled if ownership is not None else None,
    )
    turns = TurnRunner(
        live,
        replies=replies,
        keeper=keeper,
        metrics=metrics,
        activity=activity,
        fence_of=ownership.fence if ownership is not None else None,
        budget=meter,
        spoken=voice.spoken,
    )
    kind: Callable[..., SessionManager] = SessionManager
    if ownership is not None:  # ending a session needs its lease
        kind = functools.partial(SharedSessions, claim=ownership.claim)
    sessions = kind(
        settings.sessions,
        builder=factory,
        db=db,
        scheduler=background.scheduler,
        clock=clock,
        turns=turns,
        replies=replies,
        platform_hints={a.name: a.prompt_hint for a in adapters if a.prompt_hint},
        on_end=metrics.session_ended,
        people=people,
    )
    live.subscribe(lambda fresh: sessions.reconfigure(fresh.sessions))
    link_desk = LinkDesk(
        people,
        salt=functools.cache(gateway_db.install_salt),
        clock=clock,
        stores=factory.store_for,
        merge_memories=provider_merger(background.provider, settings.home),
        sessions=sessions,
    )
    pairing = PairingDesk(
        await asyncio.to_thread(PairingRequests, where),
        auth,
        lambda: live.current,
        clock,
        replies.adapters,
    )
    services = GatewayServices(
        live=live,
        clock=clock,
        sessions=sessions,
        access=auth,
        rate=limiter,
        factory=factory,
        queue=background.queue,
        gateway_db=gateway_db,
        metrics=metrics,
        activity=activity,
        load=load or (lambda: load_settings(settings.home)),
        tool_servers=mcp.health,
        budgets=meter,
        people=link_desk,
        pairing=pairing,
    )
    if coordination is not None:
        shared = coordination.rate_limiter(settings.auth.rate_limit_per_minute)
        live.subscribe(lambda fresh: shared.reconfigure(fresh.auth.rate_limit_per_minute))
        rate: LocalRateCheck | SharedRateCheck = SharedRateCheck(shared, limiter)
    else:
        rate = LocalRateCheck(limiter)
    commands = command_registry()
    if not secrets.has_key:
        logger.info("CHORUS_SECRET_KEY is not set: people cannot store secrets (/secret set)")
    desk = SecretDesk(secrets, clock, inbox=inbox, adapters=replies.adapters)
    desk.register(commands)
    approvals.register(commands)
    link_desk.register(commands)
    ExportDesk(replies.adapters, clock).register(commands)
    voice.register(commands)
    metrics.known_commands(command.name for command in commands.visible(is_admin=True))
    runner = GatewayRunner(
        live,
        sessions=sessions,
        auth=auth,
        rate=rate,
        dedupe=Deduplicator(clock),
        commands=commands,
        services=services,
        clock=clock,
        metrics=metrics,
        activity=activity,
        replies=replies,
        keeper=keeper,
        secrets=desk,
        media=MediaReader(lambda: (live.current.llm, live.current.media), llm),
        pairing=pairing,
    )

    def queue_numbers() -> tuple[int, int, int]:
        status = background.queue.status()
        return status.queued + status.deferred + status.scheduled, status.failed, status.outbox

    metrics.set_sources(queue_status=queue_numbers)
    closing = asyncio.Event()
    router: ReplicaRouter | None = None
    retractions = Retractions(sessions)
    intake = Intake(
        on_message=runner.handle,
        on_command=runner.answer_command,
        inbox=inbox,
        on_retraction=retractions.take,
    )
    if coordination is not None and ownership is not None:
        assert isinstance(sessions, SharedSessions)
        router = ReplicaRouter(
            coordination,
            ownership,
            sessions,
            inbox,
            replies,
            clock,
            serve=runner.handle,
            retractions=retractions,
            accepting=lambda: not closing.is_set(),
            orphan_seconds=settings.gateway.orphan_seconds,
            metrics=replica_metrics,
        )
        intake = Intake(
            on_message=router.route,
            on_command=runner.answer_command,
            inbox=inbox,
            accepting=router.accepting,
            budgets=TelegramBudgets(coordination),
            on_retraction=router.retractions.take,
        )
        if replica_metrics is not None:
            replica_metrics.set_sources(
                leases_held=ownership.leases_held, mailbox_depth=coordination.mailbox.depth
            )
        logger.info("replica %s of several (Redis and PostgreSQL shared)", router.replica_id)
    return GatewayStack(
        live,
        db,
        background,
        factory,
        gateway_db,
        metrics,
        services,
        runner,
        inbox,
        keeper,
        intake,
        router,
        closing,
        mcp=mcp,
        secrets=secrets,
        meter=meter,
        approvals=approvals,
        people=link_desk,
        retractions=retractions,
        voice=voice,
    )

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
from dataclasses import dataclass, field

from agent import tracing
from agent.llm import LLMClient, Sleep
from agent.tools.mcp import STARTUP_WAIT, McpTools
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
from gateway.app._background import Background, start_background
from gateway.app._failures import PlatformFailures
from gateway.app._ownership import SessionOwnership
from gateway.app._replica import ReplicaRouter
from gateway.app._replicas import (
    SharedRateCheck,
    TelegramBudgets,
    claim_pollers,
    open_coordination,
)
from gateway.app._services import GatewayServices
from gateway.app._tools import build_tools
from gateway.app._tracing import TRACE_FLUSH_SECONDS, start_tracing
from gateway.app._voice import open_voice
from gateway.budgets import BudgetMeter, open_meter
from gateway.clock import Clock, SystemClock
from gateway.commands import (
    ApprovalDesk,
    CommandRegistry,
    ExportDesk,
    LinkDesk,
    PairingDesk,
    SecretDesk,
    VoiceDesk,
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
from gateway.sessions.retention import RetentionSweeper
from memory import log_content
from memory.approvals import ApprovalStore
from memory.people import PeopleStore
from memory.secrets import SecretStore
from memory.store import StagedWrites
from memory.tables import storage_fault
from memory.transcripts import AsyncSessionDB

logger = logging.getLogger(__name__)


@dataclass
class GatewayStack:
    live: LiveSettings
    db: AsyncSessionDB
    background: Background
    factory: AgentFactory
    gateway_db: GatewayDB
    metrics: Metrics
    services: GatewayServices
    runner: GatewayRunner
    inbox: Inbox
    keeper: InboxKeeper
    intake: Intake
    router: ReplicaRouter | None
    """Several replicas share Redis and PostgreSQL (``gateway.app._replica``); else None."""
    closing: asyncio.Event
    """Set when the process begins to stop: /readyz fails, replicas' webhooks answer 503."""
    failures: PlatformFailures = field(default_factory=lambda: PlatformFailures(require_all=False))
    """Platforms whose token was rejected: reported, not waited for."""
    _pollers: list[asyncio.Task[None]] = field(default_factory=list)
    mcp: McpTools | None = None
    """The MCP servers the agent's tools come from (``tools.mcp_servers``)."""
    secrets: SecretStore | None = None
    """Each person's sealed secrets (``/secret``), for tools that need their credentials."""
    started: bool = False
    """``start`` has finished: what a restart left is taken up, messages are taken."""
    meter: BudgetMeter | None = None
    """The usage ledger and per-person budgets every LLM call goes through."""
    approvals: ApprovalDesk | None = None
    """Calls to ``ask`` tools waiting for a person's answer."""
    retention: RetentionSweeper | None = None
    retractions: Retractions | None = None
    """Messages deleted or edited on their platform, applied to the transcripts."""
    """Purges ended sessions past ``sessions.retention_days`` (started with the stack)."""
    people: LinkDesk | None = None
    """Linked accounts (``/link``)."""
    voice: VoiceDesk | None = None
    """Spoken replies (``/voice``) and the people's preferences they are kept in."""

    async def start(self) -> None:
        """Take up sessions, connect the platforms, take up what a restart left pending
        (one process; replicas hand it on), and (replicas) serve the mailbox."""
        runner = self.runner
        adapters = list(runner.adapters.values())
        if self.mcp is not None:  # the first message sees their tools, unless one is slow
            self.mcp.start()
            await self.mcp.started(STARTUP_WAIT)
        if self.router is not None:
            self._pollers = await claim_pollers(self.router.coordination, adapters)
        await runner.sessions.recover(set(runner.adapters))
        left = {} if self.router is not None else await self.keeper.left(runner.adapters)
        self.failures.require_all = self.settings.gateway.require_all_platforms
        for adapter in adapters:
            await adapter.start(self.intake)
            if adapter.failure() is None:
                await runner.publish_commands(adapter)
        self.failures.check(adapters)
        if self.meter is not None:
            await self.meter.maintain()  # old ledger rows go at start, then hourly
        if self.approvals is not None:  # before a resumed turn may ask again
            await self.approvals.start()
        if self.router is None:
            await self.keeper.resume(adapters, runner.take, runner.replies.conclude, left)
        runner.open()
        if self.router is not None:
            await self.router.start()
        self.retention = RetentionSweeper(self.services.clock, lambda: self.settings)
        self.retention.start()
        self.started = True

    def stop_accepting(self) -> None:
        self.closing.set()

    @property
    def settings(self) -> Settings:
        return self.live.current

    async def readiness(self) -> dict[str, bool]:
        checks = {"accepting": not self.closing.is_set()}
        if not self.started:  # what a restart left is still being taken up
            checks["started"] = False
        failed = self.failures.check(self.runner.adapters.values())
        checks |= {
            f"adapter:{n}": a.is_connected()
            for n, a in self.runner.adapters.items()
            if n not in failed
        }
        if failed and len(failed) == len(self.runner.adapters):
            checks["platforms"] = False  # every platform failed: nothing is served
        checks["session_db"] = await asyncio.to_thread(self._db_writable)
        places = {self.inbox.location, self.gateway_db.location, self.db.db.location}
        checks["storage"] = all(storage_fault(p) is None for p in places)  # disk full, down
        if self.settings.database.url is not None:
            checks["postgres"] = checks["session_db"]
        if self.settings.redis.url is not None:
            status = await asyncio.to_thread(self.background.queue.status)
            checks["redis"] = status.reachable
        if self.router is not None:
            checks["replica"] = self.router.healthy
        return checks

    def _db_writable(self) -> bool:
        try:
            self.db.db.set_title("__readiness_probe__", None)
        except Exception:
            return False
        return True

    async def close(self, timeout: float | None = None) -> None:
        """Hand queued jobs over (bounded by ``timeout``) and release everything."""
        timeout = self.settings.gateway.shutdown_timeout if timeout is None else timeout
        if self.retention is not None:
            await self.retention.stop()
        if self.retractions is not None:
            await self.retractions.settle()
        for task in self._pollers:
            task.cancel()
        await asyncio.gather(*self._pollers, return_exceptions=True)
        if self.router is not None:
            await self.router.stop()
        await asyncio.to_thread(self.background.close, timeout)
        await self.factory.aclose()
        if self.mcp is not None:
            await self.mcp.stop()
        if self.meter is not None:
            await self.meter.aclose()
        await self.db.aclose()
        await asyncio.to_thread(self.gateway_db.close)
        await asyncio.to_thread(self.keeper.close)
        await asyncio.to_thread(self.inbox.close)
        await asyncio.to_thread(self._close_stores)
        await asyncio.to_thread(tracing.shutdown, min(timeout, TRACE_FLUSH_SECONDS))

    def _close_stores(self) -> None:
        """The optional stores, each closed if this gateway opened it."""
        if self.factory.staging is not None:
            self.factory.staging.close()
        if self.secrets is not None:
            self.secrets.close()
        if self.approvals is not None:
            self.approvals.store.close()
        if self.people is not None:
            self.people.people.close()
        if self.voice is not None:
            self.voice.choice.preferences.close()
        if self.runner.pairing is not None:
            self.runner.pairing.requests.close()


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

"""Builds the gateway's parts from settings, for `chorus gateway`, `chorus console` and tests."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from agent.llm import LLMClient
from gateway.access import Authorizer, Deduplicator, GatewayDB, RateLimiter
from gateway.adapters import BaseAdapter
from gateway.app._agents import AgentFactory
from gateway.app._background import Background, start_background
from gateway.app._replica import ReplicaRouter
from gateway.app._replicas import claim_pollers, replica_router
from gateway.app._services import GatewayServices
from gateway.clock import Clock, SystemClock
from gateway.commands import CommandRegistry, register_admin_commands, register_user_commands
from gateway.config import LiveSettings, Settings, database_location, load_settings
from gateway.ops import Activity, Metrics
from gateway.runner import GatewayRunner
from gateway.sessions import Inbox, SessionManager, SharedSessions
from memory.store import StagedWrites
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
    closing: bool = False
    router: ReplicaRouter | None = None
    """Set when several replicas share Redis and PostgreSQL (``gateway.app._replica``)."""

    async def start(self) -> None:
        """Take up sessions, connect the platforms, and (replicas) serve the mailbox."""
        if self.router is not None:
            await claim_pollers(self.router.coordination, self.runner.adapters.values())
        await self.runner.start()
        if self.router is not None:
            await self.router.start()

    @property
    def settings(self) -> Settings:
        return self.live.current

    async def readiness(self) -> dict[str, bool]:
        checks = {"accepting": not self.closing}
        checks |= {f"adapter:{n}": a.is_connected() for n, a in self.runner.adapters.items()}
        checks["session_db"] = await asyncio.to_thread(self._db_writable)
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
        if self.router is not None:
            await self.router.stop()
        await asyncio.to_thread(self.background.close, timeout)
        await self.factory.aclose()
        await self.db.aclose()
        await asyncio.to_thread(self.gateway_db.close)
        await asyncio.to_thread(self.inbox.close)
        if self.factory.staging is not None:
            await asyncio.to_thread(self.factory.staging.close)


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
    llm: LLMClient | None = None,
    adapters: list[BaseAdapter] | None = None,
    load: Callable[[], Settings] | None = None,
) -> GatewayStack:
    """Every part of a gateway or console process; ``load`` re-reads settings for a reload."""
    live = LiveSettings(settings)
    clock = clock or SystemClock()
    where = database_location(settings)
    db = await AsyncSessionDB.open(where)
    background = await asyncio.to_thread(start_background, live)
    gateway_db = await asyncio.to_thread(GatewayDB, where)
    staging = await asyncio.to_thread(StagedWrites, where)
    inbox = await asyncio.to_thread(Inbox, where, clock)
    factory = AgentFactory(
        live,
        db=db,
        llm=llm,
        scheduler=background.scheduler,
        provider=background.provider,
        now=clock.time,
        staging=staging,
    )
    metrics = Metrics()
    activity = Activity(clock)
    auth = Authorizer(settings.auth, gateway_db, clock)
    rate = RateLimiter(settings.auth.rate_limit_per_minute, clock)
    replicated = settings.database.url is not None and settings.redis.url is not None
    sessions = (SharedSessions if replicated else SessionManager)(
        settings.sessions,
        builder=factory,
        db=db,
        scheduler=background.scheduler,
        clock=clock,
        on_end=metrics.session_ended,
    )
    live.subscribe(lambda fresh: auth.reload(fresh.auth))
    live.subscribe(lambda fresh: rate.reconfigure(fresh.auth.rate_limit_per_minute))
    live.subscribe(lambda fresh: sessions.reconfigure(fresh.sessions))
    services = GatewayServices(
        live=live,
        clock=clock,
        sessions=sessions,
        access=auth,
        rate=rate,
        factory=factory,
        queue=background.queue,
        gateway_db=gateway_db,
        metrics=metrics,
        activity=activity,
        load=load or (lambda: load_settings(settings.home)),
    )
    runner = GatewayRunner(
        live,
        sessions=sessions,
        auth=auth,
        rate=rate,
        dedupe=Deduplicator(clock),
        commands=command_registry(),
        services=services,
        clock=clock,
        metrics=metrics,
        activity=activity,
        adapters=adapters,
        inbox=inbox,
    )

    def queue_numbers() -> tuple[int, int, int]:
        status = background.queue.status()
        return status.queued + status.deferred + status.scheduled, status.failed, status.outbox

    metrics.set_sources(queue_status=queue_numbers)

    def observe_llm(seconds: float, failed: bool) -> None:
        if failed:
            metrics.llm_error()
        else:
            metrics.observe_llm(seconds)

    factory.llm.observers.append(observe_llm)
    stack = GatewayStack(
        live, db, background, factory, gateway_db, metrics, services, runner, inbox
    )
    if isinstance(sessions, SharedSessions):
        stack.router = replica_router(settings, runner, sessions, inbox, clock)
        metrics.set_replica(stack.router.replica_id)
        stack.router.attach(lambda: not stack.closing)
    return stack

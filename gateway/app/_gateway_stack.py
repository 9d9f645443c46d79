"""The gateway's parts, as ``open_stack`` wired them: started, probed and closed together."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from agent import tracing
from agent.tools.mcp import STARTUP_WAIT, McpTools
from gateway.access import GatewayDB
from gateway.adapters import Intake
from gateway.app._agents import AgentFactory
from gateway.app._background import Background
from gateway.app._failures import PlatformFailures
from gateway.app._replica import ReplicaRouter
from gateway.app._replicas import claim_pollers
from gateway.app._services import GatewayServices
from gateway.app._tracing import TRACE_FLUSH_SECONDS
from gateway.budgets import BudgetMeter
from gateway.commands import ApprovalDesk, LinkDesk, VoiceDesk
from gateway.config import LiveSettings, Settings
from gateway.ops import Metrics
from gateway.runner import GatewayRunner
from gateway.sessions import Inbox, InboxKeeper, Retractions
from gateway.sessions.retention import RetentionSweeper
from memory.secrets import SecretStore
from memory.tables import storage_fault
from memory.transcripts import AsyncSessionDB


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
        runner.sessions.builder.warm()  # the LLM client's first-request work, done by the start
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

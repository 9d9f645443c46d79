"""``GatewayServices``: the ``CommandServices`` of a running gateway or console."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from agent.tools.mcp import ServerHealth
from gateway.access import Authorizer, GatewayDB, RateLimiter
from gateway.app import _texts as t
from gateway.app._agents import AgentFactory
from gateway.budgets import BudgetMeter
from gateway.clock import Clock
from gateway.commands import PairingControl, PeopleControl
from gateway.config import LiveSettings, Settings
from gateway.errors import GatewayError
from gateway.events import InboundMessage
from gateway.ops import Activity, Metrics
from gateway.sessions import SessionManager
from memory.jobs import BackgroundQueue
from memory.paths import UserKey
from memory.store import MemoryStore, StagedWrites

logger = logging.getLogger(__name__)


@dataclass
class GatewayServices:
    live: LiveSettings
    clock: Clock
    sessions: SessionManager
    access: Authorizer
    rate: RateLimiter
    factory: AgentFactory
    queue: BackgroundQueue
    gateway_db: GatewayDB
    metrics: Metrics
    activity: Activity
    load: Callable[[], Settings]
    """Reads the configuration again, from the same environment as at start-up."""
    tool_servers: Callable[[], list[ServerHealth]] = field(default=lambda: [])
    """The MCP servers' health, for ``/admin status``."""
    budgets: BudgetMeter | None = None
    """The usage ledger and per-person budgets (``/usage``, ``/admin usage|budget``)."""
    people: PeopleControl | None = None
    """Linked accounts (``/admin link|unlink``)."""
    pairing: PairingControl | None = None
    """Strangers' pairing requests (``/admin approve|deny #ID``)."""

    @property
    def settings(self) -> Settings:
        return self.live.current

    @property
    def staging(self) -> StagedWrites | None:
        return self.factory.staging

    def store_for(self, key: UserKey | None) -> MemoryStore:
        return self.factory.store_for(key)

    async def audit(self, actor: str, command: str, args: str, outcome: str) -> None:
        await asyncio.to_thread(
            self.gateway_db.audit, actor, command, args, outcome, self.clock.time()
        )

    def count(self, command: str, outcome: str) -> None:
        self.metrics.command(command, outcome)

    async def status_lines(self) -> list[str]:
        status = await asyncio.to_thread(self.queue.status)
        staging = self.staging
        pending = await asyncio.to_thread(staging.count_pending) if staging else 0
        return [
            t.STATUS_REVIEW.format(n=pending),
            t.STATUS_SESSIONS.format(n=len(self.sessions.sessions), live=self.sessions.live_agents),
            t.STATUS_QUEUE.format(q=status.queued, f=status.failed, o=status.outbox),
            *(t.STATUS_TOOL_SERVER.format(line=h.line()) for h in self.tool_servers()),
        ]

    async def stats_lines(self) -> list[str]:
        messages, turns = self.activity.per_minute()
        recent = [
            t.STATS_MINUTE.format(messages=messages, turns=turns),
            t.STATS_TOKENS.format(n=self.activity.tokens_today()),
        ]
        snap = self.metrics.snapshot()
        totals = [f"{name}: {value:g}" for name, value in sorted(snap.items())]
        return [*recent, *await self.status_lines(), t.STATS_SINCE_START, *totals]

    async def tool_names(self, msg: InboundMessage) -> list[str]:
        live = self.sessions.get(msg)
        if live is not None and live.agent is not None:
            schemas = live.agent.tool_catalog()
            return sorted({str(s["function"]["name"]) for s in schemas})
        return await asyncio.to_thread(self.factory.tool_names)

    async def reload(self) -> str:
        """Re-read config.yaml and the environment; apply what can change while running."""
        try:
            fresh = await asyncio.to_thread(self.load)
        except GatewayError as exc:
            return t.RELOAD_FAILED.format(error=exc)
        pending = self.live.replace(fresh)
        if pending:
            logger.info("configuration reloaded; restart needed for %s", ", ".join(pending))
        return t.RELOADED + (t.RELOAD_PENDING.format(keys=", ".join(pending)) if pending else "")

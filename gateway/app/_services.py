"""``GatewayServices``: the ``CommandServices`` of a running gateway or console."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from gateway.access import Authorizer, GatewayDB, RateLimiter
from gateway.app._agents import AgentFactory
from gateway.clock import Clock
from gateway.config import LiveSettings, Settings, load_settings
from gateway.errors import GatewayError
from gateway.ops import Activity, Metrics
from gateway.sessions import SessionManager
from memory.jobs import BackgroundQueue
from memory.paths import UserKey
from memory.store import MemoryStore, StagedWrites

logger = logging.getLogger(__name__)

RELOADED = "Configuration reloaded."
RELOAD_FAILED = "Reload failed, nothing changed: {error}"
RELOAD_PENDING = " These need a restart to change: {keys}."


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
            f"Shared-memory writes waiting for review: {pending}.",
            f"Open sessions: {len(self.sessions.sessions)} "
            f"({self.sessions.live_agents} in memory).",
            f"Queue: {status.queued} queued, {status.failed} failed, {status.outbox} in outbox.",
        ]

    async def stats_lines(self) -> list[str]:
        messages, turns = self.activity.per_minute()
        recent = [
            f"Last minute: {messages} message(s) in, {turns} turn(s).",
            f"Tokens today (UTC): {self.activity.tokens_today():,}.",
        ]
        snap = self.metrics.snapshot()
        totals = [f"{name}: {value:g}" for name, value in sorted(snap.items())]
        return [*recent, *await self.status_lines(), "Since start:", *totals]

    async def reload(self) -> str:
        """Re-read config.yaml and the environment; apply what can change while running."""
        try:
            fresh = await asyncio.to_thread(load_settings, self.settings.home)
        except GatewayError as exc:
            return RELOAD_FAILED.format(error=exc)
        pending = self.live.replace(fresh)
        if pending:
            logger.info("configuration reloaded; restart needed for %s", ", ".join(pending))
        return RELOADED + (RELOAD_PENDING.format(keys=", ".join(pending)) if pending else "")

"""Builds the gateway's parts from settings, for `chorus gateway`, `chorus console` and tests."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from agent.llm import LLMClient
from gateway.adapters.base import BaseAdapter
from gateway.agent_factory import AgentFactory
from gateway.background import Background, start_background
from gateway.clock import Clock, SystemClock
from gateway.config import Settings
from gateway.gateway_db import GatewayDB
from gateway.metrics import Metrics
from gateway.runner import GatewayRunner
from memory.paths import ChorusPaths
from memory.store import StagedWrites
from memory.transcripts import AsyncSessionDB

logger = logging.getLogger(__name__)


@dataclass
class GatewayStack:
    settings: Settings
    db: AsyncSessionDB
    background: Background
    factory: AgentFactory
    gateway_db: GatewayDB
    metrics: Metrics
    runner: GatewayRunner

    async def readiness(self) -> dict[str, bool]:
        checks = {f"adapter:{n}": a.is_connected() for n, a in self.runner.adapters.items()}
        checks["session_db"] = await asyncio.to_thread(self._db_writable)
        if self.settings.redis.url is not None:
            status = await asyncio.to_thread(self.background.queue.status)
            checks["redis"] = status.reachable
        return checks

    def _db_writable(self) -> bool:
        try:
            self.db.db.set_title("__readiness_probe__", None)
        except Exception:
            return False
        return True

    async def close(self) -> None:
        timeout = self.settings.gateway.shutdown_timeout
        await asyncio.to_thread(self.background.close, timeout)
        await self.factory.aclose()
        await self.db.aclose()
        await asyncio.to_thread(self.gateway_db.close)
        if self.factory.staging is not None:
            await asyncio.to_thread(self.factory.staging.close)


async def open_stack(
    settings: Settings,
    *,
    clock: Clock | None = None,
    llm: LLMClient | None = None,
    adapters: list[BaseAdapter] | None = None,
) -> GatewayStack:
    paths = ChorusPaths(settings.home)
    db = await AsyncSessionDB.open(paths.state_db)
    background = await asyncio.to_thread(start_background, settings)
    gateway_db = await asyncio.to_thread(GatewayDB, paths.state_db)
    staging = await asyncio.to_thread(StagedWrites, paths.state_db)
    clock = clock or SystemClock()
    factory = AgentFactory(
        settings,
        db=db,
        llm=llm,
        scheduler=background.scheduler,
        load_provider=background.load_provider,
        now=clock.time,
        staging=staging,
    )
    metrics = Metrics()
    runner = GatewayRunner(
        settings,
        factory=factory,
        background=background,
        gateway_db=gateway_db,
        clock=clock,
        metrics=metrics,
        adapters=adapters,
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
    return GatewayStack(settings, db, background, factory, gateway_db, metrics, runner)

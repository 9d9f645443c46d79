"""Wiring for several replicas: the router, shared limits and budgets, one poller per token.

Replica mode is on when ``redis.url`` and ``database.url`` are both set: the
database is shared by every replica, Redis coordinates them. This module
builds the ``ReplicaRouter`` and hands the shared pieces (Telegram's send
budgets, per-user rate limits) to the parts that use them.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Iterable

from gateway.access import RateDecision
from gateway.adapters import BaseAdapter
from gateway.app._replica import ReplicaRouter
from gateway.clock import Clock
from gateway.config import Settings
from gateway.errors import ConfigError
from gateway.replicas import Budget, Coordination, PollerLock, ReplicaError, token_name
from gateway.runner import GatewayRunner
from gateway.sessions import Inbox, SharedSessions

__all__ = ["claim_pollers", "replica_id_of", "replica_router"]

logger = logging.getLogger(__name__)


def replica_id_of(settings: Settings) -> str:
    """``gateway.replica_id``, or the host name (one replica per host, as in a pod)."""
    return settings.gateway.replica_id or socket.gethostname() or "replica"


class TelegramBudgets:
    """Telegram's per-chat and global send budgets, shared through Redis."""

    def __init__(self, coordination: Coordination) -> None:
        self._budget = coordination.budget

    async def wait_for(
        self, chat_id: str, rate: float, burst: float, global_rate: float, global_burst: float
    ) -> float:
        return await self._budget.reserve_many(
            [
                Budget(f"telegram:chat:{chat_id}", rate, burst),
                Budget("telegram:global", global_rate, global_burst),
            ]
        )

    async def block(self, chat_id: str, seconds: float) -> None:
        await self._budget.block(f"telegram:chat:{chat_id}", seconds)


def replica_router(
    settings: Settings,
    runner: GatewayRunner,
    sessions: SharedSessions,
    inbox: Inbox,
    clock: Clock,
) -> ReplicaRouter:
    assert settings.redis.url is not None
    gateway = settings.gateway
    coordination = Coordination.open(
        settings.redis.url.get_secret_value(),
        replica_id_of(settings),
        lease_seconds=gateway.lease_seconds,
    )
    router = ReplicaRouter(
        coordination,
        runner,
        sessions,
        inbox,
        clock,
        lease_seconds=gateway.lease_seconds,
        orphan_seconds=gateway.orphan_seconds,
    )
    limiter = coordination.rate_limiter(settings.auth.rate_limit_per_minute)

    async def check(user_key: str) -> RateDecision:
        try:
            decision = await limiter.check(user_key)
        except ReplicaError as exc:  # Redis away: this replica's own limit still holds
            logger.warning("shared rate limit unavailable (%s)", exc)
            return runner.rate.check(user_key)
        return RateDecision(decision.allowed, decision.notify)

    runner.rate_check = check
    runner.live.subscribe(lambda fresh: limiter.reconfigure(fresh.auth.rate_limit_per_minute))
    budgets = TelegramBudgets(coordination)
    for adapter in runner.adapters.values():
        adapter.share_send_budgets(budgets)
    logger.info("replica %s of several (Redis and PostgreSQL shared)", coordination.replica_id)
    return router


async def claim_pollers(coordination: Coordination, adapters: Iterable[BaseAdapter]) -> None:
    """Refuse to start a second long poller on one bot token (Telegram answers 409 to both)."""
    for adapter in adapters:
        token = adapter.polling_token()
        if token is None:
            continue
        lock = coordination.poller_lock(f"{adapter.name}:{token_name(token)}")
        try:
            taken = await lock.acquire()
            holder = None if taken else await lock.holder()
        except ReplicaError as exc:
            raise ConfigError(f"cannot start {adapter.name} long polling: {exc}") from exc
        if not taken:
            raise ConfigError(
                f"another replica ({holder or 'unknown'}) already long-polls this {adapter.name} "
                f"bot token; with several replicas use webhooks ({adapter.name}.webhook_url)"
            )
        asyncio.get_running_loop().create_task(_keep_poller(lock), name="poller-lock")


async def _keep_poller(lock: PollerLock) -> None:
    while True:
        await asyncio.sleep(10.0)
        try:
            if not await lock.renew():
                logger.error("lost the long-polling lock of a bot token; another replica has it")
                return
        except ReplicaError as exc:
            logger.warning("could not renew the long-polling lock (%s)", exc)

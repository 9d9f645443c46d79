"""Wiring for several replicas: the router, shared limits and budgets, one poller per token.

Replica mode is on when ``redis.url`` and ``database.url`` are both set: the
database is shared by every replica, Redis coordinates them. This module opens
that coordination and builds the shared pieces the wiring hands to the parts
that use them (Telegram's send budgets, per-user rate limits, the lock that
lets one replica long-poll a bot token).
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Iterable

from gateway.access import RateDecision, RateLimiter
from gateway.adapters import BaseAdapter
from gateway.config import Settings
from gateway.errors import ConfigError
from gateway.replicas import (
    Budget,
    Coordination,
    PollerLock,
    ReplicaError,
    SharedRateLimiter,
    token_name,
)
from memory.paths import UserKey

__all__ = [
    "SharedRateCheck",
    "TelegramBudgets",
    "claim_pollers",
    "open_coordination",
    "replica_id_of",
]

POLLER_RENEW_SECONDS = 10.0

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


def open_coordination(settings: Settings) -> Coordination:
    """The Redis coordination of this replica (``redis.url`` must be set)."""
    assert settings.redis.url is not None
    return Coordination.open(
        settings.redis.url.get_secret_value(),
        replica_id_of(settings),
        lease_seconds=settings.gateway.lease_seconds,
    )


class SharedRateCheck:
    """Per-user rate limits every replica counts against together; with Redis away, this
    replica's own ``RateLimiter`` still holds."""

    def __init__(self, shared: SharedRateLimiter, local: RateLimiter) -> None:
        self.shared = shared
        self._local = local

    async def check(self, user_key: UserKey) -> RateDecision:
        try:
            decision = await self.shared.check(str(user_key))
        except ReplicaError as exc:
            logger.warning("shared rate limit unavailable (%s)", exc)
            return self._local.check(str(user_key))
        return RateDecision(decision.allowed, decision.notify)


async def claim_pollers(
    coordination: Coordination, adapters: Iterable[BaseAdapter]
) -> list[asyncio.Task[None]]:
    """Refuse to start a second long poller on one bot token (Telegram answers 409 to both).

    Returns the tasks that keep the locks taken; cancel them at shutdown."""
    keeping: list[asyncio.Task[None]] = []
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
        keeping.append(asyncio.create_task(_keep_poller(lock), name="poller-lock"))
    return keeping


async def _keep_poller(lock: PollerLock) -> None:
    while True:
        await asyncio.sleep(POLLER_RENEW_SECONDS)
        try:
            if not await lock.renew():
                logger.error("lost the long-polling lock of a bot token; another replica has it")
                return
        except ReplicaError as exc:
            logger.warning("could not renew the long-polling lock (%s)", exc)

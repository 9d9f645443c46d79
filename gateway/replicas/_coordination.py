"""``Coordination``: one Redis client and every primitive one replica uses, built together.

The gateway's wiring (``gateway.app``) holds this one object; it never sees the
Redis client itself, so ``redis`` stays imported in this package only.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

from redis import exceptions
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from gateway.replicas._budget import SharedBudget
from gateway.replicas._common import DEFAULT_PREFIX
from gateway.replicas._errors import guard
from gateway.replicas._handoff import Handoff
from gateway.replicas._leases import SessionLeases
from gateway.replicas._mailbox import ReplicaMailbox
from gateway.replicas._ratelimit import SharedRateLimiter
from gateway.replicas._registry import PollerLock, ReplicaRegistry

__all__ = ["Coordination", "reconnecting", "token_name"]

logger = logging.getLogger(__name__)

SOCKET_TIMEOUT = 10.0
"""Seconds a Redis call may take; longer than a mailbox read blocks (1 s)."""
RECONNECTS = 1
"""Fresh connections a call tries after its connection broke. When Redis restarted,
every pooled connection is stale and the command never reached the new server, so it
is sent again at once on a new connection; a Redis that is down still fails the call
at once (replicas then answer 503). A timeout is not retried: the command may have run."""


def reconnecting() -> Retry:
    """The retry policy of the client: on a broken connection only, never on a timeout."""
    return Retry(NoBackoff(), RECONNECTS, supported_errors=(exceptions.ConnectionError,))


def token_name(token: str) -> str:
    """A name for a lock on a bot token that does not reveal the token."""
    return hashlib.sha256(token.encode()).hexdigest()[:16]


@dataclass(eq=False)
class Coordination:
    replica_id: str
    leases: SessionLeases
    mailbox: ReplicaMailbox
    registry: ReplicaRegistry
    budget: SharedBudget
    _client: Redis
    _prefix: str
    handoff: Handoff
    """Routing a message in one round trip (the lease, the owner's liveness, its stream)."""

    @classmethod
    def open(
        cls, url: str, replica_id: str, *, lease_seconds: float, prefix: str = DEFAULT_PREFIX
    ) -> Coordination:
        client = Redis.from_url(
            url,
            socket_timeout=SOCKET_TIMEOUT,
            socket_connect_timeout=SOCKET_TIMEOUT,
            retry=reconnecting(),
        )
        return cls(
            replica_id,
            SessionLeases(client, replica_id, ttl=lease_seconds, prefix=prefix),
            ReplicaMailbox(client, replica_id, prefix=prefix),
            ReplicaRegistry(client, replica_id, ttl=lease_seconds, prefix=prefix),
            SharedBudget(client, prefix=prefix),
            client,
            prefix,
            Handoff(client, replica_id, ttl=lease_seconds, prefix=prefix),
        )

    def rate_limiter(self, per_minute: int) -> SharedRateLimiter:
        return SharedRateLimiter(self._client, per_minute, prefix=self._prefix)

    def poller_lock(self, name: str, ttl: float = 30.0) -> PollerLock:
        return PollerLock(self._client, name, self.replica_id, ttl, prefix=self._prefix)

    async def ping(self) -> bool:
        """Whether Redis answers now."""
        try:
            with guard("pinging Redis"):
                await self._client.ping()
        except Exception:
            return False
        return True

    async def aclose(self) -> None:
        await self._client.aclose()

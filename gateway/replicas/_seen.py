"""``SharedSeen``: drop a platform's retry of a message even when another replica took it.

Platforms redeliver an update they think was lost (a webhook that timed out, a
Slack event retried after 3 s), and behind a load balancer the retry may reach
another replica than the first try. Each replica's own dedupe cannot see that,
so the ids are recorded in Redis with ``SET NX PX``: one atomic command, the
first writer wins and every later one learns it was seen. Entries expire after
``ttl``; platforms retry within minutes, an hour is plenty.
"""

from __future__ import annotations

import logging

from redis.asyncio import Redis

from gateway.replicas._common import DEFAULT_PREFIX, make_key, ms
from gateway.replicas._errors import guard

__all__ = ["SharedSeen"]

logger = logging.getLogger(__name__)


class SharedSeen:
    """Message ids recorded by any replica within the last ``ttl`` seconds."""

    def __init__(self, client: Redis, *, ttl: float = 3600.0, prefix: str = DEFAULT_PREFIX) -> None:
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        self._client = client
        self._ttl_ms = ms(ttl)
        self._prefix = prefix

    async def seen(self, platform: str, chat_id: str, message_id: str) -> bool:
        """True if the id was recorded before (a duplicate); records it otherwise."""
        key = make_key(self._prefix, "seen", platform, chat_id, message_id)
        with guard("recording a message id"):
            created = await self._client.set(key, "1", nx=True, px=self._ttl_ms)
        if not created:
            logger.debug("duplicate %s message %s in chat %s", platform, message_id, chat_id)
            return True
        return False

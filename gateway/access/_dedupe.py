"""Drop repeated deliveries of one platform message (retries, reconnects)."""

from __future__ import annotations

from gateway.adapters import SeenSet
from gateway.clock import Clock


class Deduplicator:
    """Remembers message ids for ``ttl`` seconds, at most ``capacity`` of them."""

    def __init__(self, clock: Clock, *, ttl: float = 3600.0, capacity: int = 50_000) -> None:
        self._seen = SeenSet(capacity, ttl=ttl, clock=clock)

    def seen(self, platform: str, chat_id: str, message_id: str) -> bool:
        """True if this id was seen within the TTL; records it otherwise."""
        return not self._seen.add((platform, chat_id, message_id))

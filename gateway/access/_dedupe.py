"""Drop repeated deliveries of one platform message (retries, reconnects)."""

from __future__ import annotations

from collections import OrderedDict

from gateway.clock import Clock


class Deduplicator:
    """Remembers message ids for ``ttl`` seconds, at most ``capacity`` of them."""

    def __init__(self, clock: Clock, *, ttl: float = 3600.0, capacity: int = 50_000) -> None:
        self._clock = clock
        self._ttl = ttl
        self._capacity = capacity
        self._seen: OrderedDict[tuple[str, str, str], float] = OrderedDict()

    def seen(self, platform: str, chat_id: str, message_id: str) -> bool:
        """True if this id was seen within the TTL; records it otherwise."""
        now = self._clock.time()
        while self._seen:
            oldest, at = next(iter(self._seen.items()))
            if now - at < self._ttl and len(self._seen) < self._capacity:
                break
            del self._seen[oldest]
        key = (platform, chat_id, message_id)
        if key in self._seen:
            return True
        self._seen[key] = now
        return False

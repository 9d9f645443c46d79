"""The hosted Mem0 platform through mem0's own ``MemoryClient``.

The client is made on first use, not in ``initialize``: its constructor pings
``/v1/ping/`` to check the API key, and a platform that is down should count
against the circuit breaker rather than remove the provider from the session.
It gets its own ``httpx.Client`` with a bounded timeout (mem0's default is five
minutes). Every search is filtered by ``user_id``; adds are queued by the
platform (``infer`` runs there), so an add reports the event, not memory ids.
"""

from __future__ import annotations

import importlib
import threading
from types import ModuleType
from typing import Any

import httpx

from ._backend import AddOutcome, MemoryRecord, Message, created_ids, to_record, to_records
from ._config import Settings

TIMEOUT = 30.0
PAGE_SIZE = 100
MAX_PAGES = 1000


class PlatformBackend:
    def __init__(self, mem0: ModuleType, settings: Settings) -> None:
        self._mem0 = mem0
        self._settings = settings
        self._client: Any = None
        self._http: httpx.Client | None = None
        self._lock = threading.Lock()

    def _memory_client(self) -> Any:
        with self._lock:
            if self._client is None:
                http = httpx.Client(timeout=TIMEOUT)
                try:
                    self._client = self._mem0.MemoryClient(
                        api_key=self._settings.api_key, host=self._settings.host, client=http
                    )
                except BaseException:
                    http.close()
                    raise
                self._http = http
            return self._client

    def _not_found(self, exc: Exception) -> bool:
        exceptions = importlib.import_module(f"{self._mem0.__name__}.exceptions")
        missing = getattr(exceptions, "MemoryNotFoundError", None)
        return isinstance(missing, type) and isinstance(exc, missing)

    # -- the Backend protocol ------------------------------------------------

    def add(
        self,
        user_id: str,
        messages: list[Message],
        *,
        metadata: dict[str, Any],
        infer: bool,
        wait: float,
    ) -> AddOutcome:
        result = self._memory_client().add(
            messages, user_id=user_id, metadata=metadata, infer=infer
        )
        event = result.get("event_id") if isinstance(result, dict) else None
        ids = created_ids(result)
        return AddOutcome(ids, queued=not ids, event_id=str(event) if event else None)

    def search(self, user_id: str, query: str, limit: int, *, wait: float) -> list[MemoryRecord]:
        result = self._memory_client().search(query, filters={"user_id": user_id}, top_k=limit)
        return to_records(result)

    def get(self, user_id: str, memory_id: str, *, wait: float) -> MemoryRecord | None:
        try:
            return to_record(self._memory_client().get(memory_id))
        except Exception as exc:
            if self._not_found(exc):
                return None
            raise

    def update(self, user_id: str, memory_id: str, text: str, *, wait: float) -> None:
        self._memory_client().update(memory_id, text=text)

    def delete(self, user_id: str, memory_id: str, *, wait: float) -> None:
        self._memory_client().delete(memory_id)

    def list_all(self, user_id: str, *, wait: float) -> list[MemoryRecord]:
        """Every page of ``get_all`` filtered by ``user_id``."""
        client, records, page = self._memory_client(), [], 1
        while True:
            answer = client.get_all(filters={"user_id": user_id}, page=page, page_size=PAGE_SIZE)
            found = to_records(answer)
            records.extend(found)
            more = isinstance(answer, dict) and answer.get("next")
            if not more or not found or page >= MAX_PAGES:
                return records
            page += 1

    def delete_all(self, user_id: str, *, wait: float) -> None:
        """``DELETE /v1/memories/?user_id=…``: the platform's delete of one user's memories."""
        self._memory_client().delete_all(user_id=user_id)

    def forget_local(self, user_id: str) -> None:
        return None

    def close(self) -> None:
        with self._lock:
            http, self._http, self._client = self._http, None, None
        if http is not None:
            http.close()

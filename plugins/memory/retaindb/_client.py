"""RetainDB's REST API, spoken with httpx (RetainDB has no PyPI client).

Every request carries ``Authorization: Bearer <api_key>``, the memory and
context routes also ``X-API-Key`` (the API accepts either there). Memory
bodies name the configured ``project`` and the canonical chorus user key as
``user_id``, so no call reaches another user's memories:

* ``POST /v1/memory`` ``{project, user_id, session_id, content, memory_type,
  importance, write_mode}`` — the stored memory (its ``id`` is kept for ``/undo``);
* ``POST /v1/memory/search`` ``{project, user_id, session_id, query, top_k,
  include_pending}`` — ``{"results": [{"id", "content", "score"}]}``;
* ``POST /v1/context/query`` ``{project, user_id, session_id, query,
  include_memories, max_tokens}`` — ``{"results": [...]}``;
* ``GET /v1/memory/profile/{user_id}?project=&include_pending=true`` —
  ``{"memories": [...]}``;
* ``DELETE /v1/memory/{id}``;
* ``POST /v1/memory/ingest/session`` ``{project, user_id, session_id,
  messages, write_mode}``;
* ``POST /v1/files`` (multipart ``file``, ``path``, ``scope``), ``GET
  /v1/files?prefix=&limit=``, ``GET /v1/files/{id}/content``, ``POST
  /v1/files/{id}/ingest``, ``DELETE /v1/files/{id}``.

Each call is bounded by the configured timeout and goes through the kit's
:class:`~plugins.memory._kit.Guard`; failures raise
:class:`~plugins.memory._kit.BackendFailed` with the exception class or the
HTTP status only, never response text (``permanent`` for a 4xx other than 401,
403, 408 and 429, which the breaker does not count), a 404
:class:`~plugins.memory._kit.NotFound`.
"""

from __future__ import annotations

import logging
import threading
from typing import Any
from urllib.parse import quote

from plugins.memory._breaker import CircuitBreaker
from plugins.memory._kit import BackendFailed, Guard, NotFound, Paused

from ._config import Settings
from ._deps import LIBRARY

__all__ = ["BackendFailed", "Client", "NotFound", "Paused", "path"]

logger = logging.getLogger(__name__)

MEMORY = "/v1/memory"
SEARCH = "/v1/memory/search"
CONTEXT = "/v1/context/query"
INGEST_SESSION = "/v1/memory/ingest/session"
FILES = "/v1/files"


def path(*parts: str) -> str:
    """A route under ``/v1`` with each of ``parts`` URL-quoted as one segment."""
    return "/v1/" + "/".join(quote(p, safe="") for p in parts)


class Client:
    def __init__(self, settings: Settings, guard: Guard) -> None:
        self._settings = settings
        self.project = settings.project
        self.guard = guard
        self._httpx = LIBRARY.load()
        self._http: Any = None
        self._lock = threading.Lock()

    def _client(self) -> Any:
        with self._lock:
            if self._http is None:
                self._http = self._httpx.Client(
                    base_url=self._settings.base_url,
                    timeout=self._settings.timeout,
                    headers={"Authorization": f"Bearer {self._settings.api_key}"},
                )
            return self._http

    def scoped(self, user_id: str, session_id: str = "", **extra: Any) -> dict[str, Any]:
        """A memory body: the project, the user and (when known) the session, then ``extra``."""
        body: dict[str, Any] = {"project": self.project, "user_id": user_id}
        if session_id:
            body["session_id"] = session_id
        return {**body, **extra}

    def call(
        self,
        operation: str,
        method: str,
        route: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        files: dict[str, Any] | None = None,
        data: dict[str, str] | None = None,
        raw: bool = False,
        timeout: float | None = None,
    ) -> Any:
        """The JSON answer of one request (the bytes when ``raw``; None when empty).

        Raises Paused, NotFound, BackendFailed.
        """
        headers = {}
        if route.startswith(("/v1/memory", "/v1/context")):
            headers["X-API-Key"] = self._settings.api_key

        def request() -> Any:
            try:
                response = self._client().request(
                    method,
                    route,
                    json=json,
                    params=params,
                    files=files,
                    data=data,
                    headers=headers,
                    timeout=self._settings.timeout if timeout is None else timeout,
                )
            except Exception as exc:
                raise self.guard.failed(operation, type(exc).__name__) from None
            status = response.status_code
            if status == 404:
                self.guard.breaker.success()
                raise NotFound(operation)
            if status >= 400:
                transient = status >= 500 or status in (401, 403, 408, 429)
                raise self.guard.failed(operation, f"HTTP {status}", permanent=not transient)
            return response

        response = self.guard.run(operation, request)
        if raw:
            return bytes(response.content)
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise self.guard.failed(operation, "invalid JSON", permanent=True) from None

    @property
    def breaker(self) -> CircuitBreaker:
        return self.guard.breaker

    def close(self) -> None:
        with self._lock:
            http, self._http = self._http, None
        if http is not None:
            http.close()

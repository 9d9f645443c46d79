"""The RetainDB REST contract, spoken with httpx (RetainDB has no PyPI client).

Every request carries ``Authorization: Bearer <api_key>``; everything lives
under one user, ``/v1/users/{user}`` with the canonical chorus user key
URL-quoted, so no path reaches another user's data:

* ``POST /memories`` ``{"content", "metadata"}`` with an ``Idempotency-Key``
  header — 201 ``{"memory": {"id", "content", ...}}``; the same key again is
  answered 200 with the memory it created the first time, nothing stored twice;
* ``GET /memories/search?q=&limit=`` — ``{"results": [{"id", "content", "score"}]}``;
* ``DELETE /memories/{id}`` — 204, or 404 when it is not this user's;
* ``PUT /files/{name}`` ``{"content"}`` with an ``Idempotency-Key`` — 200 ``{"file": {...}}``;
* ``GET /files/{name}`` — ``{"file": {"name", "content", "size", "updated_at"}}``;
  ``GET /files`` — ``{"files": [{"name", "size", "updated_at"}]}``;
* ``GET /v1/health``.

No file deletion and no memory update are used (a changed fact is a new
memory; a file is replaced by ``PUT``). An ``Idempotency-Key`` is remembered by
the server per user: the same key again is never a second write.

Each call is bounded by the configured timeout and goes through the circuit
breaker; failures raise :class:`BackendFailed` with the exception class or the
HTTP status only, never response text.
"""

from __future__ import annotations

import logging
import threading
from typing import Any
from urllib.parse import quote

from plugins.errors import PluginError
from plugins.memory._breaker import CircuitBreaker

from ._config import Settings
from ._deps import load

logger = logging.getLogger(__name__)


class BackendFailed(PluginError, RuntimeError):
    def __init__(self, operation: str, cause: str, *, permanent: bool = False) -> None:
        self.operation = operation
        self.cause = cause
        self.permanent = permanent
        """A 4xx answer: sending the same request again will not help."""
        super().__init__(f"retaindb {operation} failed: {cause}")


class Paused(PluginError, RuntimeError):
    """The breaker is open: RetainDB is not called until the cooldown has passed."""


class NotFound(PluginError, RuntimeError):
    """404: no such memory or file for this user."""


def user_path(user_key: str, *parts: str) -> str:
    segments = [quote(user_key, safe=""), *(quote(p, safe="") for p in parts)]
    return "/v1/users/" + "/".join(segments)


class Client:
    def __init__(self, settings: Settings, breaker: CircuitBreaker) -> None:
        self._settings = settings
        self.breaker = breaker
        self._httpx = load()
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

    def call(
        self,
        operation: str,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
        timeout: float | None = None,
    ) -> Any:
        """The JSON answer of one request (None for 204); raises Paused, NotFound, BackendFailed."""
        if not self.breaker.allow():
            raise Paused(
                f"retaindb is paused after {self.breaker.threshold} failures in a row; "
                f"it tries again in {max(1, round(self.breaker.retry_in()))} s"
            )
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        try:
            response = self._client().request(
                method,
                path,
                json=json,
                params=params,
                headers=headers,
                timeout=self._settings.timeout if timeout is None else timeout,
            )
        except Exception as exc:
            self._failed(operation, type(exc).__name__)
            raise BackendFailed(operation, type(exc).__name__) from None
        status = response.status_code
        if status == 404:
            self.breaker.success()
            raise NotFound(operation)
        if status >= 400:
            transient = status >= 500 or status in (401, 403, 408, 429)
            if transient:
                self._failed(operation, f"HTTP {status}")
            raise BackendFailed(operation, f"HTTP {status}", permanent=not transient)
        if self.breaker.success():
            logger.warning("retaindb resumed: %s succeeded after the pause", operation)
        if status == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise BackendFailed(operation, "invalid JSON", permanent=True) from None

    def _failed(self, operation: str, cause: str) -> None:
        if self.breaker.failure():
            logger.warning(
                "retaindb %s failed (%s): %d failures in a row, pausing for %.0f s",
                operation,
                cause,
                self.breaker.failures,
                self.breaker.cooldown,
            )
        else:
            logger.warning("retaindb %s failed (%s)", operation, cause)

    def close(self) -> None:
        with self._lock:
            http, self._http = self._http, None
        if http is not None:
            http.close()

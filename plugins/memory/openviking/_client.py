"""The OpenViking REST API (``/api/v1/*``), the small documented subset chorus uses.

OpenViking's own Python client (``openviking`` on PyPI) is not a dependency;
this speaks its HTTP API with httpx. Endpoints, as the OpenViking server
documents them (every answer is ``{"status": "ok"|"error", "result": ...,
"error": {"code", "message"}}``):

* ``POST /api/v1/sessions`` ``{"session_id"}`` — create a session with our id;
* ``GET /api/v1/sessions/{id}`` — its meta; chorus reads ``message_count``
  (messages added and not yet committed) and ``commit_count``;
* ``POST /api/v1/sessions/{id}/messages`` ``{"role", "content"}``;
* ``POST /api/v1/sessions/{id}/commit`` — archive the session and extract memories;
* ``POST /api/v1/search/find`` ``{"query", "target_uri", "limit"}`` — semantic
  search; the result has ``memories``/``resources``/``skills`` lists of
  ``{"uri", "abstract", "score"}``;
* ``GET /api/v1/fs/ls?uri=``, ``GET /api/v1/content/read?uri=``,
  ``DELETE /api/v1/fs?uri=`` — browse, read and remove under ``viking://``;
* ``GET /health``.

The ``openviking`` server is not installed here and nothing was run against
it. The session routes (``auto_create``, the meta's ``message_count`` and
``commit_count``, NOT_FOUND answered inside the envelope), ``fs/ls``
(entries with ``uri`` and ``isDir``), ``DELETE /fs`` and the identity headers
were read from the OpenViking server's source; the shape of a ``search/find``
result and of ``content/read`` are from its documentation only. Authentication
is ``X-API-Key``; the request names ``X-OpenViking-Account: default``, the user
(``X-OpenViking-User``) and ``X-OpenViking-Agent: chorus``, which a ROOT key
(or trusted mode) may do, so ``viking://user/…`` resolves to that user's own
space. A USER-role key cannot name other users: chorus needs a ROOT key.

Every call is bounded by the configured timeout and goes through the circuit
breaker; a failure raises :class:`BackendFailed` naming the exception class only.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from plugins.memory._breaker import CircuitBreaker

from ._config import Settings
from ._deps import load

logger = logging.getLogger(__name__)

AGENT_ID = "chorus"
ACCOUNT_ID = "default"


class BackendFailed(RuntimeError):
    """An OpenViking call failed; ``cause`` is the exception class or HTTP status, never text."""

    def __init__(self, operation: str, cause: str) -> None:
        self.operation = operation
        self.cause = cause
        super().__init__(f"openviking {operation} failed: {cause}")


class Paused(RuntimeError):
    """The breaker is open: OpenViking is not called until the cooldown has passed."""


class NotFound(RuntimeError):
    """The server answered 404 / NOT_FOUND."""


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
                headers = {"X-OpenViking-Agent": AGENT_ID, "X-OpenViking-Account": ACCOUNT_ID}
                if self._settings.api_key:
                    headers["X-API-Key"] = self._settings.api_key
                self._http = self._httpx.Client(
                    base_url=self._settings.base_url,
                    timeout=self._settings.timeout,
                    headers=headers,
                )
            return self._http

    def call(
        self,
        operation: str,
        method: str,
        path: str,
        user: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Any:
        """The ``result`` of one request for ``user``; raises Paused, NotFound or BackendFailed."""
        if not self.breaker.allow():
            raise Paused(
                f"openviking is paused after {self.breaker.threshold} failures in a row; "
                f"it tries again in {max(1, round(self.breaker.retry_in()))} s"
            )
        try:
            response = self._client().request(
                method,
                path,
                json=json,
                params=params,
                headers={"X-OpenViking-User": user},
                timeout=self._settings.timeout if timeout is None else timeout,
            )
        except Exception as exc:
            self._failed(operation, type(exc).__name__)
            raise BackendFailed(operation, type(exc).__name__) from None
        body: Any = None
        try:
            body = response.json()
        except ValueError:
            body = None
        code = body.get("error", {}).get("code") if isinstance(body, dict) else None
        if response.status_code == 404 or code == "NOT_FOUND":
            self.breaker.success()
            raise NotFound(operation)
        if response.status_code >= 400 or not isinstance(body, dict) or body.get("status") != "ok":
            cause = f"HTTP {response.status_code}" + (f" {code}" if code else "")
            if response.status_code >= 500 or response.status_code in (401, 403, 429):
                self._failed(operation, cause)
            raise BackendFailed(operation, cause)
        if self.breaker.success():
            logger.warning("openviking resumed: %s succeeded after the pause", operation)
        return body.get("result")

    def _failed(self, operation: str, cause: str) -> None:
        if self.breaker.failure():
            logger.warning(
                "openviking %s failed (%s): %d failures in a row, pausing for %.0f s",
                operation,
                cause,
                self.breaker.failures,
                self.breaker.cooldown,
            )
        else:
            logger.warning("openviking %s failed (%s)", operation, cause)

    def close(self) -> None:
        with self._lock:
            http, self._http = self._http, None
        if http is not None:
            http.close()

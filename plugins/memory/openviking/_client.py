"""The OpenViking REST API (``/api/v1/*``), the small subset chorus uses.

OpenViking's own Python client (``openviking`` on PyPI) is not a dependency;
this speaks its HTTP API with httpx. Checked against the real server
(``openviking-server`` 0.5.2, tests/real_servers/test_openviking_real.py).
Every answer is the envelope ``{"status": "ok"|"error", "result": ...,
"error": null|{"code", "message"}}`` (``error`` is ``null``, not absent, on
success):

* ``GET /api/v1/sessions/{id}?auto_create=true`` — the session's meta, made
  if missing; chorus reads ``message_count`` (messages added and not yet
  committed), ``commit_count`` and ``user.user_id`` (whose space it is in).
  A missing session without ``auto_create`` is ``NOT_FOUND`` (HTTP 404);
* ``POST /api/v1/sessions/{id}/messages`` ``{"role", "content"}``;
* ``POST /api/v1/sessions/{id}/commit`` — archives the messages before it
  answers; extracting memories from them runs afterwards in the server's
  durable queue (a server killed meanwhile resumes it when it restarts);
* ``POST /api/v1/search/find`` ``{"query", "target_uri", "limit"}`` — the
  result has ``memories``/``resources``/``skills`` lists of
  ``{"uri", "abstract", "score", "level", ...}``;
* ``GET /api/v1/fs/ls?uri=`` (entries with ``uri`` and ``isDir``),
  ``GET /api/v1/fs/stat?uri=``, ``GET /api/v1/content/read?uri=`` (the text)
  and ``DELETE /api/v1/fs?uri=`` — which answers ok for a URI that does not
  exist, hence the ``stat`` first.

URIs name their user: ``viking://user/<user id>/…`` (``viking://~/…`` is an
alias of the requesting user's own); the uid-less ``viking://user/memories``
of older servers is refused (``INVALID_URI``), and another user's space is
``PERMISSION_DENIED`` (HTTP 403) for a USER-role identity.

Identity: every request names ``X-OpenViking-Account: default`` and the user
(``X-OpenViking-User``), with the server's ``root_api_key`` as ``X-API-Key``.
The server must run with ``server.auth_mode = "trusted"``, the one mode in
which it honours those headers (as a USER-role identity). In ``api_key``
mode it strips them: a ROOT key is refused on every data route (403) and a
user key would put every chorus user in that key's one space, which
:func:`._ops.commit_marker` detects (the session's ``user``) and refuses.

Every call is bounded by the configured timeout and goes through the kit's
:class:`~plugins.memory._kit.Guard`; a failure raises
:class:`~plugins.memory._kit.BackendFailed` naming the exception class or HTTP
status only (a 4xx other than 401, 403 and 429 is not counted by the breaker),
a 404 :class:`~plugins.memory._kit.NotFound`.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from plugins.memory._kit import Guard, NotFound

from ._config import Settings
from ._deps import LIBRARY

logger = logging.getLogger(__name__)

ACCOUNT_ID = "default"


class Client:
    def __init__(self, settings: Settings, guard: Guard) -> None:
        self._settings = settings
        self.guard = guard
        self._httpx = LIBRARY.load()
        self._http: Any = None
        self._lock = threading.Lock()

    def _client(self) -> Any:
        with self._lock:
            if self._http is None:
                headers = {"X-OpenViking-Account": ACCOUNT_ID}
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

        def request() -> Any:
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
                raise self.guard.failed(operation, type(exc).__name__) from None
            return self._result(operation, response)

        return self.guard.run(operation, request)

    def _result(self, operation: str, response: Any) -> Any:
        body: Any = None
        try:
            body = response.json()
        except ValueError:
            body = None
        error = body.get("error") if isinstance(body, dict) else None
        code = error.get("code") if isinstance(error, dict) else None
        if response.status_code == 404 or code == "NOT_FOUND":
            self.guard.breaker.success()
            raise NotFound(operation)
        if response.status_code >= 400 or not isinstance(body, dict) or body.get("status") != "ok":
            cause = f"HTTP {response.status_code}" + (f" {code}" if code else "")
            unwell = response.status_code >= 500 or response.status_code in (401, 403, 429)
            raise self.guard.failed(operation, cause, permanent=not unwell)
        return body.get("result")

    def close(self) -> None:
        with self._lock:
            http, self._http = self._http, None
        if http is not None:
            http.close()

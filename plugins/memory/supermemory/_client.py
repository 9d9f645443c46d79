"""The Supermemory REST API (v3 routes, as SDK 3.x calls them), through httpx.

Routes used, all under ``base_url`` with ``Authorization: Bearer <api key>``:

* ``POST /v3/memories`` — add one memory (a document Supermemory extracts and
  indexes): ``{"content", "containerTags": [tag], "customId", "metadata"}``;
  answers ``{"id", "status"}``. The same ``customId`` again updates that
  document rather than adding a second one, which makes a re-delivered
  session-end job harmless.
* ``POST /v3/search`` — ``{"q", "containerTags": [tag], "limit"}``; answers
  ``{"results": [{"documentId", "title", "score", "chunks": [{"content",
  "score", "isRelevant"}], "metadata", ...}], "total", "timing"}``.
* ``GET /v3/memories/{id}`` — one memory with its ``containerTags``, read
  before a delete to check it belongs to the caller.
* ``DELETE /v3/memories/{id}`` — forget it.
* ``POST /v4/profile`` — ``{"containerTag": tag, "q"?}``; answers
  ``{"profile": {"static": [...], "dynamic": [...]}, "searchResults"?}``: the
  facts Supermemory keeps about the person.

The ``supermemory`` package is not used: its 5.x releases speak a different
API. Every call has a timeout and goes through :class:`Guard`, which counts
transport errors, timeouts, 429 and 5xx answers on the circuit breaker (a dead
backend is then left alone for the cooldown); other 4xx answers are the
request's fault and are raised as :class:`Rejected` without being counted.
Error text never carries memory text or the key: only the exception class or
the HTTP status.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, TypeVar

from plugins.errors import PluginError
from plugins.memory._breaker import CircuitBreaker

from ._config import Settings

logger = logging.getLogger(__name__)

T = TypeVar("T")


class Paused(PluginError, RuntimeError):
    """Supermemory is paused after repeated failures; the message says for how long."""


class BackendFailed(PluginError, RuntimeError):
    """A call failed (network, timeout, 429/5xx); ``cause`` names it, never quotes it."""

    def __init__(self, operation: str, cause: str) -> None:
        self.operation = operation
        self.cause = cause
        super().__init__(f"supermemory {operation} failed: {cause}")


class Rejected(PluginError, RuntimeError):
    """Supermemory refused the request (a 4xx other than 429)."""

    def __init__(self, operation: str, status: int) -> None:
        self.operation = operation
        self.status = status
        super().__init__(f"supermemory {operation} refused: HTTP {status}")


@dataclass(frozen=True)
class Hit:
    id: str
    text: str
    score: float | None = None
    tags: list[str] | None = None
    """The hit's ``containerTags`` when the API named them."""

    def public(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "memory": self.text}
        if self.score is not None:
            data["score"] = round(self.score, 4)
        return data


@dataclass(frozen=True)
class Profile:
    static: list[str] = field(default_factory=list)
    dynamic: list[str] = field(default_factory=list)


class Guard:
    """The circuit breaker around every call, and the log lines of failures."""

    def __init__(self, breaker: CircuitBreaker) -> None:
        self.breaker = breaker

    @property
    def paused(self) -> bool:
        return not self.breaker.allow()

    def run(self, operation: str, call: Callable[[], T]) -> T:
        if self.paused:
            seconds = max(1, round(self.breaker.retry_in()))
            raise Paused(
                f"supermemory is paused after {self.breaker.threshold} failures in a row; "
                f"it tries again in {seconds} s"
            )
        try:
            result = call()
        except (Rejected, BackendFailed) as exc:
            if isinstance(exc, BackendFailed):
                self._failed(operation, exc.cause)
            raise
        except Exception as exc:
            logger.debug("supermemory %s failure", operation, exc_info=exc)
            self._failed(operation, type(exc).__name__)
            raise BackendFailed(operation, type(exc).__name__) from None
        if self.breaker.success():
            logger.warning("supermemory resumed: %s succeeded after the pause", operation)
        return result

    def _failed(self, operation: str, cause: str) -> None:
        opened = self.breaker.failure()
        logger.warning(
            "supermemory %s failed (%s): %d failure(s) in a row%s",
            operation,
            cause,
            self.breaker.failures,
            f", pausing for {self.breaker.cooldown:.0f} s" if opened else "",
        )


def _text(item: dict[str, Any]) -> str:
    chunks = item.get("chunks")
    parts: list[str] = []
    if isinstance(chunks, list):
        relevant = [c for c in chunks if isinstance(c, dict) and c.get("isRelevant", True)]
        parts = [str(c["content"]) for c in relevant or chunks if isinstance(c.get("content"), str)]
    if not parts:
        for key in ("memory", "content", "summary", "title"):
            if isinstance(item.get(key), str) and item[key].strip():
                parts = [item[key]]
                break
    return " ".join(" ".join(parts).split())


def _hit(item: Any) -> Hit | None:
    if not isinstance(item, dict):
        return None
    ident = item.get("documentId") or item.get("id")
    if not ident:
        return None
    score = item.get("score")
    tags = item.get("containerTags")
    return Hit(
        id=str(ident),
        text=_text(item),
        score=float(score)
        if isinstance(score, int | float) and not isinstance(score, bool)
        else None,
        tags=[str(t) for t in tags] if isinstance(tags, list) else None,
    )


def _strings(value: Any) -> list[str]:
    return (
        [str(v) for v in value if isinstance(v, str) and v.strip()]
        if isinstance(value, list)
        else []
    )


class Client:
    """One user's-agnostic HTTP client; every method names the container tag it acts in."""

    def __init__(self, httpx: ModuleType, settings: Settings, guard: Guard) -> None:
        self._httpx = httpx
        self._guard = guard
        self._timeout = settings.timeout
        self._http: Any = httpx.Client(
            base_url=settings.base_url,
            headers={"Authorization": f"Bearer {settings.api_key}"},
            timeout=settings.timeout,
        )

    def _request(
        self, operation: str, method: str, path: str, body: Any = None, timeout: float | None = None
    ) -> Any:
        def call() -> Any:
            wait = min(timeout, self._timeout) if timeout is not None else self._timeout
            response = self._http.request(method, path, json=body, timeout=wait)
            status = int(response.status_code)
            if status == 429 or status >= 500:
                raise BackendFailed(operation, f"HTTP {status}")
            if status == 404 and method in ("GET", "DELETE"):
                return None
            if status >= 400:
                raise Rejected(operation, status)
            return response.json() if response.content else {}

        return self._guard.run(operation, call)

    def add(self, tag: str, content: str, *, custom_id: str, metadata: dict[str, str]) -> str:
        body = {
            "content": content,
            "containerTags": [tag],
            "customId": custom_id,
            "metadata": metadata,
        }
        answer = self._request("add", "POST", "/v3/memories", body)
        return str(answer.get("id", "")) if isinstance(answer, dict) else ""

    def search(
        self, tag: str, query: str, limit: int, *, timeout: float | None = None
    ) -> list[Hit]:
        body = {"q": query, "containerTags": [tag], "limit": limit}
        answer = self._request("search", "POST", "/v3/search", body, timeout)
        items = answer.get("results") if isinstance(answer, dict) else None
        hits = [_hit(item) for item in items] if isinstance(items, list) else []
        # a hit that says it lives elsewhere is dropped, whatever the server did
        return [h for h in hits if h is not None and h.text and (h.tags is None or tag in h.tags)]

    def owns(self, tag: str, memory_id: str) -> bool:
        """Whether memory ``memory_id`` exists and carries ``tag``."""
        answer = self._request("get", "GET", f"/v3/memories/{memory_id}")
        tags = answer.get("containerTags") if isinstance(answer, dict) else None
        return isinstance(tags, list) and tag in tags

    def delete(self, memory_id: str) -> None:
        self._request("delete", "DELETE", f"/v3/memories/{memory_id}")

    def profile(self, tag: str, query: str | None = None) -> Profile:
        body: dict[str, Any] = {"containerTag": tag}
        if query:
            body["q"] = query
        answer = self._request("profile", "POST", "/v4/profile", body)
        profile = answer.get("profile") if isinstance(answer, dict) else None
        if not isinstance(profile, dict):
            return Profile()
        return Profile(_strings(profile.get("static")), _strings(profile.get("dynamic")))

    def close(self) -> None:
        self._http.close()

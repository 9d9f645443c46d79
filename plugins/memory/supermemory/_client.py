"""Supermemory through its official Python SDK (``supermemory`` 3.x), one sync client per session.

Calls, all scoped to one container tag (the SDK sends ``Authorization: Bearer``):

* ``documents.add`` — ``POST /v3/documents`` ``{"content", "containerTag",
  "customId", "metadata"}``, answers ``{"id", "status"}``; the same
  ``customId`` again updates that document instead of adding a second one.
* ``search.memories`` — ``POST /v4/search`` ``{"q", "containerTag", "limit"}``,
  answers ``{"results": [{"id", "memory", "similarity", ...}], ...}``: the
  memories Supermemory extracted, each with the id ``memories.forget`` takes.
* ``profile`` — ``POST /v4/profile`` ``{"containerTag", "q"?}``, answers
  ``{"profile": {"static", "dynamic"}, "searchResults"?}``: the lasting and the
  recent facts about the person, and the memories matching ``q``.
* ``memories.forget`` — ``DELETE /v4/memories`` ``{"containerTag", "id"}``; a
  memory outside that container is not found (404).
* ``POST /v4/conversations`` (the SDK's raw ``post``, it has no method for it)
  ``{"conversationId", "messages": [{"role", "content"}], "containerTags",
  "metadata"}``: a whole session, ingested or updated under its id.

The SDK's own retries are off (``max_retries=0``) and every call has a timeout:
what must not be lost waits on disk for the next session end, and a dead
backend is left alone by the circuit breaker instead. Every call goes through
:class:`~plugins.memory._kit.Guard`: connection errors, timeouts, 429 and 5xx
answers count on the breaker and come out as
:class:`~plugins.memory._kit.BackendFailed`; other 4xx answers are the
request's fault and come out as :class:`Rejected`, uncounted. Error text never
carries memory text or the key: only the HTTP status or a short cause.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from types import ModuleType
from typing import Any, TypeVar

from plugins.memory._kit import BackendFailed, Guard, Paused, Refused

from ._config import Settings

__all__ = ["BackendFailed", "Client", "Hit", "Paused", "Profile", "Rejected"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

CONVERSATIONS = "/v4/conversations"
LIST_PAGE = 100
MAX_PAGES = 1000


class Rejected(Refused):
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

    def public(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "memory": self.text}
        if self.score is not None:
            data["score"] = round(self.score, 4)
        return data


@dataclass(frozen=True)
class Profile:
    static: list[str] = field(default_factory=list)
    dynamic: list[str] = field(default_factory=list)
    hits: list[Hit] = field(default_factory=list)
    """The memories matching the query, when one was given."""


def _hit(item: Any) -> Hit | None:
    ident = getattr(item, "id", None)
    text = getattr(item, "memory", None) or getattr(item, "chunk", None)
    if not isinstance(ident, str) or not ident or not isinstance(text, str):
        return None
    score = getattr(item, "similarity", None)
    return Hit(
        id=ident,
        text=" ".join(text.split()),
        score=float(score)
        if isinstance(score, int | float) and not isinstance(score, bool)
        else None,
    )


def _hits(items: Any) -> list[Hit]:
    hits = [_hit(item) for item in items] if isinstance(items, list) else []
    return [h for h in hits if h is not None and h.text]


def _strings(value: Any) -> list[str]:
    return (
        [str(v) for v in value if isinstance(v, str) and v.strip()]
        if isinstance(value, list)
        else []
    )


class Client:
    """The SDK client of one session; every method names the container tag it acts in."""

    def __init__(self, sdk: ModuleType, settings: Settings, guard: Guard) -> None:
        self._sdk = sdk
        self._guard = guard
        self._timeout = settings.timeout
        self._client: Any = sdk.Supermemory(
            api_key=settings.api_key,
            base_url=settings.base_url,
            timeout=settings.timeout,
            max_retries=0,
        )

    def _run(self, operation: str, call: Callable[[], T]) -> T:
        def translated() -> T:
            try:
                return call()
            except self._sdk.APIStatusError as exc:
                status = int(exc.status_code)
                if status == 429 or status >= 500:
                    raise self._guard.failed(operation, f"HTTP {status}") from None
                raise Rejected(operation, status) from None
            except self._sdk.APITimeoutError:
                timed_out = f"Timeout after {self._timeout:g} s"
                raise self._guard.failed(operation, timed_out) from None
            except self._sdk.APIConnectionError:
                raise self._guard.failed(operation, "connection failed") from None

        return self._guard.run(operation, translated)

    def _wait(self, timeout: float | None) -> float:
        return min(timeout, self._timeout) if timeout is not None else self._timeout

    def add(self, tag: str, content: str, *, custom_id: str, metadata: dict[str, str]) -> str:
        """Add (or update, same ``custom_id``) a document in ``tag``; its id."""
        answer = self._run(
            "add",
            lambda: self._client.documents.add(
                content=content, container_tag=tag, custom_id=custom_id, metadata=metadata
            ),
        )
        return str(getattr(answer, "id", "") or "")

    def ingest(
        self,
        tag: str,
        conversation_id: str,
        messages: list[dict[str, str]],
        metadata: dict[str, str],
    ) -> None:
        """Ingest (or update, same ``conversation_id``) a whole conversation in ``tag``."""
        body = {
            "conversationId": conversation_id,
            "messages": messages,
            "containerTags": [tag],
            "metadata": metadata,
        }
        self._run("ingest", lambda: self._client.post(CONVERSATIONS, body=body, cast_to=object))

    def search(
        self, tag: str, query: str, limit: int, *, timeout: float | None = None
    ) -> list[Hit]:
        answer = self._run(
            "search",
            lambda: self._client.search.memories(
                q=query, container_tag=tag, limit=limit, timeout=self._wait(timeout)
            ),
        )
        return _hits(getattr(answer, "results", None))

    def profile(
        self, tag: str, query: str | None = None, *, timeout: float | None = None
    ) -> Profile:
        """The profile of ``tag``, with the memories matching ``query`` when given."""
        extra = {"q": query} if query else {}
        answer = self._run(
            "profile",
            lambda: self._client.profile(container_tag=tag, timeout=self._wait(timeout), **extra),
        )
        profile = getattr(answer, "profile", None)
        found = getattr(answer, "search_results", None)
        return Profile(
            _strings(getattr(profile, "static", None)),
            _strings(getattr(profile, "dynamic", None)),
            _hits(getattr(found, "results", None)),
        )

    def forget(self, tag: str, memory_id: str) -> bool:
        """Forget memory ``memory_id`` of ``tag``; False when ``tag`` has no such memory."""
        try:
            self._run(
                "forget", lambda: self._client.memories.forget(container_tag=tag, id=memory_id)
            )
        except Rejected as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def documents(self, tag: str) -> list[dict[str, Any]]:
        """Every document (and conversation) of ``tag``, with its content."""
        found: list[dict[str, Any]] = []
        page = 1
        while True:
            answer = self._run("list", partial(self._list_page, tag, page))
            items = list(getattr(answer, "memories", None) or [])
            found.extend(
                {
                    "id": str(d.id),
                    "custom_id": d.custom_id,
                    "text": d.content or "",
                    "created_at": d.created_at,
                }
                for d in items
            )
            pages = getattr(getattr(answer, "pagination", None), "total_pages", 1) or 1
            if not items or page >= int(pages) or page >= MAX_PAGES:
                return found
            page += 1

    def _list_page(self, tag: str, page: int) -> Any:
        return self._client.documents.list(
            container_tags=[tag], include_content=True, limit=LIST_PAGE, page=page
        )

    def delete_all(self, tag: str) -> int:
        """Delete every document of ``tag`` (Supermemory deletes their memories with them)."""
        answer = self._run(
            "delete", lambda: self._client.documents.delete_bulk(container_tags=[tag])
        )
        return int(getattr(answer, "deleted_count", 0) or 0)

    def close(self) -> None:
        self._client.close()

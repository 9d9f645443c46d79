"""A fake Hindsight API server: the three routes hindsight-client 1.1 calls for chorus.

``FakeHindsight`` is an aiohttp server on 127.0.0.1 (its own loop in a thread,
like the other fakes). With an ``api_key`` every request must carry
``Authorization: Bearer <api_key>`` (else 401), as the client sends it:

* ``POST /v1/default/banks/{bank_id}/memories`` (retain): ``{"items": [{"content",
  "context", "timestamp", "metadata", "document_id", ...}], "async": bool}``;
  answers ``{"success", "bank_id", "items_count", "async"}``. Each sentence of
  two words or more becomes a fact (a ``Label:`` at the start of a line is left
  out, and so are ``Assistant:`` lines), kept in that bank only; an item
  with a ``document_id`` replaces the facts that document gave before
  (Hindsight's upsert).
* ``POST /v1/default/banks/{bank_id}/memories/recall``: ``{"query", "budget",
  "max_tokens", ...}``; answers ``{"results": [{"id", "text", "type",
  "mentioned_at", "document_id"}]}``, ranked by the cosine of
  :func:`tests.fakes.openai_server.embed_text` vectors, cut at ``max_tokens`` words.
* ``POST /v1/default/banks/{bank_id}/reflect``: ``{"query", "budget", "context"}``;
  answers ``{"text"}`` built from the bank's best facts.

* ``GET /v1/default/banks/{bank_id}/memories/list`` (``limit``, ``offset``):
  ``{"items": [{"id", "text", "context", "date", "document_id", "metadata"}],
  "total", "limit", "offset"}``;
* ``DELETE /v1/default/banks/{bank_id}``: the bank and everything in it;
  ``{"success", "message", "deleted_count"}``, 404 for a bank it does not know.

Banks appear on first retain; recall on an unknown bank finds nothing.
``fail(status, times)`` makes the next requests fail; ``delay`` holds every
answer back that many seconds.
"""

from __future__ import annotations

import asyncio
import re
import threading
import uuid
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from .loop_thread import LoopThread
from .openai_server import embed_text

PREFIX = "/v1/default/banks/{bank_id}"
DIMENSIONS = 256
THRESHOLD = 0.1
BUDGETS = ("low", "mid", "high")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_LABEL = re.compile(r"^[A-Za-z][\w ]{0,30}:\s+")
BODY = web.RequestKey("body", dict)


@dataclass
class Fact:
    id: str
    text: str
    document_id: str | None
    context: str | None
    mentioned_at: str
    metadata: dict[str, str] = field(default_factory=dict)


def extract_facts(content: str) -> list[str]:
    """What a deterministic extraction keeps: each sentence of two words or more.

    Lines an ``Assistant:`` said are left out, as a model told to remember the
    user would.
    """
    facts: list[str] = []
    for line in content.splitlines():
        if line.startswith("Assistant:"):
            continue
        for sentence in _SENTENCE.split(_LABEL.sub("", line.strip())):
            text = sentence.strip()
            if len(text.split()) >= 2 and text not in facts:
                facts.append(text)
    return facts


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


class FakeHindsight(LoopThread):
    thread_name = "fake-hindsight"

    def __init__(self, *, api_key: str | None = "hs-test-key") -> None:
        super().__init__()
        self.api_key = api_key
        self.base_url = ""
        self.banks: dict[str, list[Fact]] = {}
        self.requests: list[tuple[str, str, dict[str, Any]]] = []
        """``(route, bank_id, JSON body)`` of every authorised request."""
        self.unauthorised = 0
        self.delay = 0.0
        self._failures: deque[int] = deque()
        self._lock = threading.Lock()

    async def _serve(self) -> None:
        app = web.Application(middlewares=[self._middleware])
        app.router.add_post(f"{PREFIX}/memories", self._retain)
        app.router.add_post(f"{PREFIX}/memories/recall", self._recall)
        app.router.add_post(f"{PREFIX}/reflect", self._reflect)
        app.router.add_get(f"{PREFIX}/memories/list", self._list)
        app.router.add_delete(PREFIX, self._delete_bank)
        await self._listen(app)
        self.base_url = f"http://127.0.0.1:{self.port}"

    # -- scripting and inspection ---------------------------------------------

    def fail(self, status: int = 500, *, times: int = 1) -> None:
        """The next ``times`` authorised requests answer ``status``."""
        with self._lock:
            self._failures.extend([status] * times)

    def facts(self, bank_id: str) -> list[str]:
        with self._lock:
            return [f.text for f in self.banks.get(bank_id, [])]

    def calls(self, route: str) -> list[tuple[str, dict[str, Any]]]:
        """``(bank_id, body)`` of every authorised request to ``route`` (retain/recall/reflect)."""
        return [(bank, body) for r, bank, body in self.requests if r == route]

    # -- plumbing ------------------------------------------------------------

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if self.api_key is not None and (
            request.headers.get("Authorization") != f"Bearer {self.api_key}"
        ):
            self.unauthorised += 1
            return web.json_response({"detail": "Invalid API key"}, status=401)
        body: Any = dict(request.query)
        if request.method == "POST":
            try:
                body = await request.json()
            except ValueError:
                return web.json_response({"detail": "Invalid JSON"}, status=422)
        if not isinstance(body, dict):
            return web.json_response({"detail": "expected an object"}, status=422)
        route = request.path.rsplit("/", 1)[-1]
        route = {"memories": "retain"}.get(route, route)
        if request.method == "DELETE":
            route = "delete_bank"
        self.requests.append((route, request.match_info["bank_id"], body))
        if self.delay:
            await asyncio.sleep(self.delay)
        with self._lock:
            status = self._failures.popleft() if self._failures else None
        if status is not None:
            return web.json_response({"detail": "Internal error"}, status=status)
        request[BODY] = body
        response: web.StreamResponse = await handler(request)
        return response

    def _ranked(self, bank_id: str, query: str) -> list[tuple[float, Fact]]:
        probe = embed_text(query, DIMENSIONS)
        with self._lock:
            facts = list(self.banks.get(bank_id, []))
        scored = [(_cosine(probe, embed_text(f.text, DIMENSIONS)), f) for f in facts]
        hits = [(s, f) for s, f in scored if s >= THRESHOLD]
        hits.sort(key=lambda hit: -hit[0])
        return hits

    # -- handlers ------------------------------------------------------------

    async def _list(self, request: web.Request) -> web.Response:
        bank_id, query = request.match_info["bank_id"], request[BODY]
        limit, offset = int(query.get("limit", 100)), int(query.get("offset", 0))
        with self._lock:
            facts = list(self.banks.get(bank_id, []))
        items = [
            {
                "id": f.id,
                "text": f.text,
                "context": f.context or "",
                "date": f.mentioned_at,
                "document_id": f.document_id,
                "metadata": dict(f.metadata),
            }
            for f in facts[offset : offset + limit]
        ]
        return web.json_response(
            {"items": items, "total": len(facts), "limit": limit, "offset": offset}
        )

    async def _delete_bank(self, request: web.Request) -> web.Response:
        bank_id = request.match_info["bank_id"]
        with self._lock:
            facts = self.banks.pop(bank_id, None)
        if facts is None:
            return web.json_response({"detail": f"Bank '{bank_id}' not found"}, status=404)
        return web.json_response(
            {"success": True, "message": "Bank deleted", "deleted_count": len(facts)}
        )

    async def _retain(self, request: web.Request) -> web.Response:
        bank_id, body = request.match_info["bank_id"], request[BODY]
        items = body.get("items")
        if not isinstance(items, list) or not items:
            return web.json_response({"detail": "items is required"}, status=422)
        now = datetime.now(UTC).isoformat()
        with self._lock:
            bank = self.banks.setdefault(bank_id, [])
            for item in items:
                content = item.get("content") if isinstance(item, dict) else None
                if not isinstance(content, str):
                    return web.json_response({"detail": "content must be text"}, status=422)
                doc = item.get("document_id")
                if doc is not None:
                    bank[:] = [f for f in bank if f.document_id != doc]
                metadata = item.get("metadata") or {}
                for text in extract_facts(content):
                    bank.append(
                        Fact(
                            str(uuid.uuid4()),
                            text,
                            doc,
                            item.get("context"),
                            str(item.get("timestamp") or now),
                            dict(metadata),
                        )
                    )
        return web.json_response(
            {
                "success": True,
                "bank_id": bank_id,
                "items_count": len(items),
                "async": bool(body.get("async", False)),
            }
        )

    async def _recall(self, request: web.Request) -> web.Response:
        bank_id, body = request.match_info["bank_id"], request[BODY]
        query = body.get("query")
        if not isinstance(query, str) or not query.strip():
            return web.json_response({"detail": "query is required"}, status=422)
        if body.get("budget", "mid") not in BUDGETS:
            return web.json_response({"detail": "bad budget"}, status=422)
        budget_words = int(body.get("max_tokens") or 4096)
        results, used = [], 0
        for _, fact in self._ranked(bank_id, query):
            used += len(fact.text.split())
            if used > budget_words:
                break
            results.append(
                {
                    "id": fact.id,
                    "text": fact.text,
                    "type": "world",
                    "context": fact.context,
                    "mentioned_at": fact.mentioned_at,
                    "document_id": fact.document_id,
                }
            )
        return web.json_response({"results": results})

    async def _reflect(self, request: web.Request) -> web.Response:
        bank_id, body = request.match_info["bank_id"], request[BODY]
        query = body.get("query")
        if not isinstance(query, str) or not query.strip():
            return web.json_response({"detail": "query is required"}, status=422)
        best = [fact.text for _, fact in self._ranked(bank_id, query)[:3]]
        text = "From what I remember: " + " ".join(best) if best else "I have no memories of that."
        return web.json_response({"text": text})

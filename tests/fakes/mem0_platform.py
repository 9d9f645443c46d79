"""The mem0 side of the tests: a fake Mem0 platform and a fake of mem0's extraction model.

``FakeMem0Platform`` is an aiohttp server on 127.0.0.1 (its own loop in a
thread, like the other fakes) that speaks the endpoints ``mem0.MemoryClient``
calls, with its ``Authorization: Token <api_key>`` header:

* ``GET /v1/ping/`` (the constructor's key check): org, project and e-mail;
* ``POST /v3/memories/add/``: ``messages`` plus ``user_id`` (or another entity
  id), ``metadata``, ``infer``; stored at once, answered the way the platform
  does, ``{"status": "PENDING", "event_id": ...}``; ``GET /v1/event/<id>/``
  tells what the event added;
* ``POST /v3/memories/search/`` and ``POST /v3/memories/`` (get_all):
  ``filters`` must name a ``user_id`` (directly or in an ``AND``);
* ``GET``/``PUT``/``DELETE /v1/memories/<id>/``;
* ``DELETE /v1/memories/`` (``delete_all``): every memory of the entity its
  query names (``user_id``); one is required.

Memories are kept per ``user_id``. With ``infer`` (the default) each sentence
of each user message becomes a memory (:func:`extract_facts`), without it
each message is stored as it is; the same text twice for one user is stored
once. Search ranks by the cosine of :func:`tests.fakes.openai_server.embed_text`
vectors. ``fail(status, times)`` makes the next requests fail; ``leaky = True``
makes search and listing ignore ``user_id`` (a broken platform, to show the
provider still keeps other people's memories out).

:func:`mem0_responder` is a :meth:`FakeOpenAI.responder <tests.fakes.FakeOpenAI.responder>`
that answers mem0's own (OSS) extraction prompt with the JSON mem0 parses,
using the same :func:`extract_facts`, and leaves out facts already among the
prompt's existing memories, as the real model is told to.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import uuid
from collections import deque
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from .loop_thread import LoopThread
from .openai_server import embed_text

ENTITY_KEYS = ("user_id", "agent_id", "app_id", "run_id")
SEARCH_DIMENSIONS = 256
SEARCH_THRESHOLD = 0.1
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
BODY = web.RequestKey("body", object)
"""The parsed JSON body (or the query) of a request, set by the middleware."""


def extract_facts(messages: list[dict[str, Any]]) -> list[str]:
    """What a deterministic extraction model keeps of ``messages``: each user sentence."""
    facts: list[str] = []
    for message in messages:
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, str):
            continue
        for sentence in _SENTENCE.split(content.strip()):
            text = sentence.strip()
            if len(text.split()) >= 2 and text not in facts:
                facts.append(text)
    return facts


def _section(prompt: str, title: str) -> str:
    match = re.search(rf"## {re.escape(title)}\n(.*?)(?:\n\n## |\Z)", prompt, re.DOTALL)
    return match.group(1) if match else ""


def mem0_responder(body: dict[str, Any]) -> str:
    """Answer mem0's additive extraction prompt (``{"memory": [...]}``); "ok" otherwise."""
    messages = body.get("messages") or []
    system = next((m.get("content", "") for m in messages if m.get("role") == "system"), "")
    prompt = next((m.get("content", "") for m in messages if m.get("role") == "user"), "")
    if "Memory Extractor" not in str(system) or not isinstance(prompt, str):
        return "ok"
    turn = []
    for line in _section(prompt, "New Messages").splitlines():
        role, _, content = line.partition(": ")
        if role in ("user", "assistant") and content:
            turn.append({"role": role, "content": content})
    try:
        existing = {m.get("text") for m in json.loads(_section(prompt, "Existing Memories"))}
    except (ValueError, TypeError, AttributeError):
        existing = set()
    facts = [f for f in extract_facts(turn) if f not in existing]
    memory = [{"id": str(i), "text": f, "attributed_to": "user"} for i, f in enumerate(facts)]
    return json.dumps({"memory": memory})


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def _now() -> str:
    return datetime.now(UTC).isoformat()


class FakeMem0Platform(LoopThread):
    thread_name = "fake-mem0"

    def __init__(self, *, api_key: str = "m0-test-key") -> None:
        super().__init__()
        self.api_key = api_key
        self.host = ""
        self.memories: dict[str, dict[str, Any]] = {}
        self.events: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str, Any]] = []
        """``(method, path, JSON body or query)`` of every authorised request."""
        self.leaky = False
        self._failures: deque[int] = deque()
        self._lock = threading.Lock()

    async def _serve(self) -> None:
        app = web.Application(middlewares=[self._middleware])
        app.router.add_get("/v1/ping/", self._ping)
        app.router.add_post("/v3/memories/add/", self._add)
        app.router.add_post("/v3/memories/search/", self._search)
        app.router.add_post("/v3/memories/", self._get_all)
        app.router.add_get("/v1/event/{event_id}/", self._event)
        app.router.add_get("/v1/memories/{memory_id}/", self._get)
        app.router.add_put("/v1/memories/{memory_id}/", self._update)
        app.router.add_delete("/v1/memories/{memory_id}/", self._delete)
        app.router.add_delete("/v1/memories/", self._delete_all)
        await self._listen(app)
        self.host = f"http://127.0.0.1:{self.port}"

    # -- scripting -----------------------------------------------------------

    def fail(self, status: int = 503, *, times: int = 1) -> None:
        """The next ``times`` authorised requests answer ``status``."""
        with self._lock:
            self._failures.extend([status] * times)

    def memories_of(self, user_id: str) -> list[str]:
        with self._lock:
            return [m["memory"] for m in self.memories.values() if m["user_id"] == user_id]

    def _visible(self, user_id: str) -> list[dict[str, Any]]:
        with self._lock:
            return [
                dict(m) for m in self.memories.values() if self.leaky or m["user_id"] == user_id
            ]

    # -- plumbing ------------------------------------------------------------

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Token {self.api_key}":
            return web.json_response({"detail": "Invalid API key"}, status=401)
        body: Any = dict(request.query)
        if request.can_read_body:
            try:
                body = await request.json()
            except ValueError:
                return web.json_response({"detail": "Invalid JSON"}, status=400)
        self.requests.append((request.method, request.path, body))
        with self._lock:
            status = self._failures.popleft() if self._failures else None
        if status is not None:
            return web.json_response({"detail": "Service unavailable"}, status=status)
        request[BODY] = body
        response: web.StreamResponse = await handler(request)
        return response

    @staticmethod
    def _scope(body: Any) -> str | None:
        """The ``user_id`` a search or listing is limited to; None when it names none."""
        filters = body.get("filters") if isinstance(body, dict) else None
        if not isinstance(filters, dict):
            return None
        clauses = filters.get("AND") if isinstance(filters.get("AND"), list) else [filters]
        for clause in clauses:
            if isinstance(clause, dict) and isinstance(clause.get("user_id"), str):
                return str(clause["user_id"])
        return None

    def _store(self, user_id: str, text: str, metadata: dict[str, Any]) -> str | None:
        digest = hashlib.md5(text.encode("utf-8")).hexdigest()
        with self._lock:
            for memory in self.memories.values():
                if memory["user_id"] == user_id and memory["hash"] == digest:
                    return None
            memory_id = str(uuid.uuid4())
            now = _now()
            self.memories[memory_id] = {
                "id": memory_id,
                "memory": text,
                "user_id": user_id,
                "hash": digest,
                "metadata": dict(metadata),
                "categories": [],
                "created_at": now,
                "updated_at": now,
            }
            return memory_id

    # -- handlers ------------------------------------------------------------

    async def _ping(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "status": "ok",
                "org_id": "org_fake",
                "project_id": "proj_fake",
                "user_email": "chorus@example.com",
            }
        )

    async def _add(self, request: web.Request) -> web.Response:
        body = request[BODY]
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(messages, list) or not messages:
            return web.json_response({"detail": "messages is required"}, status=400)
        user_id = body.get("user_id") or (body.get("filters") or {}).get("user_id")
        if not isinstance(user_id, str) or not user_id:
            return web.json_response({"detail": "user_id is required"}, status=400)
        metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
        if body.get("infer", True):
            texts = extract_facts(messages)
        else:
            texts = [str(m["content"]) for m in messages if m.get("role") != "system"]
        results = []
        for text in texts:
            memory_id = self._store(user_id, text, metadata)
            if memory_id is not None:
                results.append({"id": memory_id, "event": "ADD", "data": {"memory": text}})
        event_id = str(uuid.uuid4())
        self.events[event_id] = {"id": event_id, "status": "SUCCEEDED", "results": results}
        return web.json_response(
            {
                "message": "Memory processing has been queued for background execution",
                "status": "PENDING",
                "event_id": event_id,
            }
        )

    async def _event(self, request: web.Request) -> web.Response:
        event = self.events.get(request.match_info["event_id"])
        if event is None:
            return web.json_response({"detail": "Event not found"}, status=404)
        return web.json_response(event)

    async def _search(self, request: web.Request) -> web.Response:
        body = request[BODY]
        user_id = self._scope(body)
        query = body.get("query") if isinstance(body, dict) else None
        if user_id is None or not isinstance(query, str) or not query.strip():
            return web.json_response({"detail": "query and filters.user_id required"}, status=400)
        limit = int(body.get("top_k") or 10)
        probe = embed_text(query, SEARCH_DIMENSIONS)
        mine = self._visible(user_id)
        for memory in mine:
            memory["score"] = _cosine(probe, embed_text(memory["memory"], SEARCH_DIMENSIONS))
        hits = [m for m in mine if m["score"] >= SEARCH_THRESHOLD]
        hits.sort(key=lambda m: -float(m["score"]))
        return web.json_response({"results": hits[:limit]})

    async def _get_all(self, request: web.Request) -> web.Response:
        user_id = self._scope(request[BODY])
        if user_id is None:
            return web.json_response({"detail": "filters.user_id required"}, status=400)
        mine = self._visible(user_id)
        page = {"count": len(mine), "next": None, "previous": None, "results": mine}
        return web.json_response(page)

    def _found(self, request: web.Request) -> dict[str, Any] | None:
        with self._lock:
            memory = self.memories.get(request.match_info["memory_id"])
            return dict(memory) if memory is not None else None

    async def _get(self, request: web.Request) -> web.Response:
        memory = self._found(request)
        if memory is None:
            return web.json_response({"detail": "Memory not found"}, status=404)
        return web.json_response(memory)

    async def _update(self, request: web.Request) -> web.Response:
        memory_id = request.match_info["memory_id"]
        text = request[BODY].get("text") if isinstance(request[BODY], dict) else None
        with self._lock:
            memory = self.memories.get(memory_id)
            if memory is None:
                return web.json_response({"detail": "Memory not found"}, status=404)
            if isinstance(text, str) and text:
                memory["memory"] = text
                memory["hash"] = hashlib.md5(text.encode("utf-8")).hexdigest()
            memory["updated_at"] = _now()
            return web.json_response(dict(memory))

    async def _delete_all(self, request: web.Request) -> web.Response:
        user_id = request.query.get("user_id")
        if not user_id:
            return web.json_response({"detail": "At least one filter is required"}, status=400)
        with self._lock:
            gone = [k for k, m in self.memories.items() if m.get("user_id") == user_id]
            for key in gone:
                del self.memories[key]
        return web.json_response({"message": "Memories deleted successfully!"})

    async def _delete(self, request: web.Request) -> web.Response:
        with self._lock:
            memory = self.memories.pop(request.match_info["memory_id"], None)
        if memory is None:
            return web.json_response({"detail": "Memory not found"}, status=404)
        return web.json_response({"message": "Memory deleted successfully!"})

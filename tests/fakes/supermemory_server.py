"""A fake Supermemory API (the v3 routes, and v4 profile, the provider calls), on 127.0.0.1.

Every request needs ``Authorization: Bearer <api_key>`` (401 otherwise), and
data is kept per container tag: nothing of one tag is found through another.

* ``POST /v3/memories`` ``{"content", "containerTags": [tag], "customId"?, "metadata"?}``:
  stored under its tag (exactly one is required here); the same ``customId``
  in the same container replaces the earlier content and keeps its id;
  answers ``{"id", "status": "queued"}``;
* ``POST /v3/search`` ``{"q", "containerTags", "limit"}``: the memories of that
  container sharing a word with ``q``, best first, as ``{"results":
  [{"documentId", "score", "containerTags", "chunks": [{"content", "score",
  "isRelevant"}]}], "total", "timing"}``; without ``containerTags``: 400;
* ``GET /v3/memories/{id}``: the memory with its ``containerTags``, or 404;
* ``DELETE /v3/memories/{id}``: 204, or 404 when unknown;
* ``POST /v4/profile`` ``{"containerTag", "q"?}``: ``{"profile": {"static":
  [facts stored by the tool], "dynamic": [the latest session memories]}}``.

``fail(status, times)`` makes the next authorised requests fail; ``hang(seconds)``
makes every request wait that long first (0 stops it); ``leaky = True`` makes
search ignore the container (a broken server, to show the provider still
drops hits that say they belong to someone else).
"""

from __future__ import annotations

import asyncio
import re
import threading
import uuid
from collections import deque
from typing import Any

from aiohttp import web

from .loop_thread import LoopThread

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset({"a", "an", "the", "is", "i", "my", "do", "of", "to", "in", "and", "what"})
BODY = web.RequestKey("body", object)


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1}


class FakeSupermemory(LoopThread):
    thread_name = "fake-supermemory"

    def __init__(self, *, api_key: str = "sm-test-key") -> None:
        super().__init__()
        self.api_key = api_key
        self.base_url = ""
        self.memories: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str, Any]] = []
        """``(method, path, JSON body)`` of every authorised request."""
        self.unauthorised = 0
        self.leaky = False
        self._failures: deque[int] = deque()
        self._hang = 0.0
        self._lock = threading.Lock()

    async def _serve(self) -> None:
        app = web.Application(middlewares=[self._middleware])
        app.router.add_post("/v3/memories", self._add)
        app.router.add_post("/v3/search", self._search)
        app.router.add_get("/v3/memories/{memory_id}", self._get)
        app.router.add_delete("/v3/memories/{memory_id}", self._delete)
        app.router.add_post("/v4/profile", self._profile)
        await self._listen(app)
        self.base_url = f"http://127.0.0.1:{self.port}"

    # -- scripting -----------------------------------------------------------

    def fail(self, status: int = 503, *, times: int = 1) -> None:
        with self._lock:
            self._failures.extend([status] * times)

    def hang(self, seconds: float) -> None:
        self._hang = seconds

    def memories_of(self, tag: str) -> list[str]:
        with self._lock:
            return [m["content"] for m in self.memories.values() if m["tag"] == tag]

    def records_of(self, tag: str) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(m) for m in self.memories.values() if m["tag"] == tag]

    def paths(self) -> list[str]:
        return [f"{method} {path}" for method, path, _ in self.requests]

    # -- plumbing ------------------------------------------------------------

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if self._hang:
            await asyncio.sleep(self._hang)
        if request.headers.get("Authorization") != f"Bearer {self.api_key}":
            self.unauthorised += 1
            return web.json_response({"error": "Unauthorized"}, status=401)
        body: Any = None
        if request.can_read_body:
            try:
                body = await request.json()
            except ValueError:
                return web.json_response({"error": "Invalid JSON"}, status=400)
        self.requests.append((request.method, request.path, body))
        with self._lock:
            status = self._failures.popleft() if self._failures else None
        if status is not None:
            return web.json_response({"error": "unavailable"}, status=status)
        request[BODY] = body
        response: web.StreamResponse = await handler(request)
        return response

    @staticmethod
    def _tag(body: Any) -> str | None:
        tags = body.get("containerTags") if isinstance(body, dict) else None
        if isinstance(tags, list) and len(tags) == 1 and isinstance(tags[0], str) and tags[0]:
            return tags[0]
        return None

    def _public(self, memory: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": memory["id"],
            "customId": memory["custom_id"],
            "content": memory["content"],
            "containerTags": [memory["tag"]],
            "metadata": memory["metadata"],
            "status": "done",
        }

    # -- handlers ------------------------------------------------------------

    async def _add(self, request: web.Request) -> web.Response:
        body = request[BODY]
        tag = self._tag(body)
        content = body.get("content") if isinstance(body, dict) else None
        if tag is None or not isinstance(content, str) or not content.strip():
            return web.json_response({"error": "content and containerTags required"}, status=400)
        custom = body.get("customId")
        with self._lock:
            memory_id = next(
                (
                    m["id"]
                    for m in self.memories.values()
                    if custom and m["tag"] == tag and m["custom_id"] == custom
                ),
                uuid.uuid4().hex,
            )
            self.memories.pop(memory_id, None)  # an update moves it to the end
            self.memories[memory_id] = {
                "id": memory_id,
                "tag": tag,
                "content": content,
                "custom_id": custom,
                "metadata": body.get("metadata") or {},
            }
        return web.json_response({"id": memory_id, "status": "queued"})

    async def _search(self, request: web.Request) -> web.Response:
        body = request[BODY]
        tag = self._tag(body)
        query = body.get("q") if isinstance(body, dict) else None
        if tag is None or not isinstance(query, str) or not query.strip():
            return web.json_response({"error": "q and containerTags required"}, status=400)
        limit = int(body.get("limit") or 10)
        probe = _words(query)
        with self._lock:
            seen = [dict(m) for m in self.memories.values() if self.leaky or m["tag"] == tag]
        scored = []
        for memory in seen:
            overlap = len(probe & _words(memory["content"]))
            if overlap:
                scored.append((overlap / max(1, len(probe)), memory))
        scored.sort(key=lambda pair: -pair[0])
        results = [
            {
                "documentId": m["id"],
                "title": None,
                "score": score,
                "containerTags": [m["tag"]],
                "metadata": m["metadata"],
                "chunks": [{"content": m["content"], "score": score, "isRelevant": True}],
            }
            for score, m in scored[:limit]
        ]
        return web.json_response({"results": results, "total": len(results), "timing": 1})

    async def _get(self, request: web.Request) -> web.Response:
        with self._lock:
            memory = self.memories.get(request.match_info["memory_id"])
            found = self._public(memory) if memory is not None else None
        if found is None:
            return web.json_response({"error": "Memory not found"}, status=404)
        return web.json_response(found)

    async def _delete(self, request: web.Request) -> web.Response:
        with self._lock:
            memory = self.memories.pop(request.match_info["memory_id"], None)
        if memory is None:
            return web.json_response({"error": "Memory not found"}, status=404)
        return web.Response(status=204)

    async def _profile(self, request: web.Request) -> web.Response:
        body = request[BODY]
        tag = body.get("containerTag") if isinstance(body, dict) else None
        if not isinstance(tag, str) or not tag:
            return web.json_response({"error": "containerTag required"}, status=400)
        mine = self.records_of(tag)
        static = [m["content"] for m in mine if m["metadata"].get("source") == "chorus_tool"]
        dynamic = [m["content"] for m in mine if m["metadata"].get("source") == "chorus"][-3:]
        return web.json_response({"profile": {"static": static, "dynamic": dynamic}})

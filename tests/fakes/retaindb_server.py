"""A fake RetainDB server: the REST contract of ``plugins.memory.retaindb._client``.

An aiohttp server on 127.0.0.1 (its own loop in a thread). Every ``/v1/users``
request must carry ``Authorization: Bearer <api_key>`` (else 401). Memories
and files are kept per user id (the path's ``{user}``). A write with an
``Idempotency-Key`` seen before for that user is answered with what the first
one stored and counted in ``replays``, never stored again.

Scripting: ``fail(status, times)`` fails the next requests; ``lose_answers(n)``
stores the next ``n`` writes and then answers 503 (a reply lost on the way, as
when the client dies); ``hold_after(n)`` stores the ``n``-th new write and then
holds its answer until :meth:`release` (the client is killed waiting for it, so
the write is on the server but not acknowledged); ``delay`` seconds are waited
before each write.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections import deque
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from ..waiting import until
from .loop_thread import LoopThread

_WORD = re.compile(r"[a-z0-9]+")
BODY = web.RequestKey("body", object)


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2}


class FakeRetainDB(LoopThread):
    thread_name = "fake-retaindb"

    def __init__(self, *, api_key: str = "rdb-test-key") -> None:
        super().__init__()
        self.api_key = api_key
        self.base_url = ""
        self.memories: dict[str, list[dict[str, Any]]] = {}
        self.files: dict[str, dict[str, dict[str, Any]]] = {}
        self.keys: dict[tuple[str, str], dict[str, Any]] = {}
        self.requests: list[tuple[str, str, Any]] = []
        self.replays = 0
        self.delay = 0.0
        self._failures: deque[int] = deque()
        self._lose = 0
        self._hold_at: int | None = None
        self._held = threading.Event()
        self._stored = 0
        self._next = 0
        self._lock = threading.Lock()

    async def _serve(self) -> None:
        app = web.Application(middlewares=[self._middleware])
        app.router.add_get("/v1/health", self._health)
        app.router.add_post("/v1/users/{user}/memories", self._remember)
        app.router.add_get("/v1/users/{user}/memories/search", self._search)
        app.router.add_delete("/v1/users/{user}/memories/{id}", self._forget)
        app.router.add_get("/v1/users/{user}/files", self._file_list)
        app.router.add_put("/v1/users/{user}/files/{name}", self._file_put)
        app.router.add_get("/v1/users/{user}/files/{name}", self._file_get)
        await self._listen(app)
        self.base_url = f"http://127.0.0.1:{self.port}"

    async def _shutdown(self) -> None:
        self._held.set()
        await super()._shutdown()

    # -- scripting -----------------------------------------------------------

    def fail(self, status: int = 503, *, times: int = 1) -> None:
        with self._lock:
            self._failures.extend([status] * times)

    def lose_answers(self, times: int = 1) -> None:
        with self._lock:
            self._lose += times

    def hold_after(self, count: int) -> None:
        with self._lock:
            self._hold_at, self._stored = count, 0
            self._held.clear()

    def release(self) -> None:
        with self._lock:
            self._hold_at = None
        self._held.set()

    @property
    def holding(self) -> bool:
        """Whether an answer is being held (its write is stored)."""
        with self._lock:
            return self._hold_at is not None and self._stored >= self._hold_at

    def memories_of(self, user: str) -> list[str]:
        with self._lock:
            return [m["content"] for m in self.memories.get(user, [])]

    # -- plumbing ------------------------------------------------------------

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path.startswith("/v1/users"):
            if request.headers.get("Authorization") != f"Bearer {self.api_key}":
                return web.json_response({"error": "unauthorized"}, status=401)
            body: Any = dict(request.query)
            if request.can_read_body:
                try:
                    body = await request.json()
                except ValueError:
                    return web.json_response({"error": "invalid JSON"}, status=400)
            request[BODY] = body
            with self._lock:
                self.requests.append((request.method, request.path, body))
                status = self._failures.popleft() if self._failures else None
            if status is not None:
                return web.json_response({"error": "unavailable"}, status=status)
        response: web.StreamResponse = await handler(request)
        return response

    async def _write(self, request: web.Request, store: Any) -> web.Response:
        """Run ``store()`` once per idempotency key; the lost-answer script applies."""
        if self.delay:
            await asyncio.sleep(self.delay)
        key = request.headers.get("Idempotency-Key", "")
        user = request.match_info["user"]
        with self._lock:
            first = self.keys.get((user, key)) if key else None
            if first is not None:
                self.replays += 1
                result, status = first, 200
            else:
                result, status = store(), 201
                if key:
                    self.keys[(user, key)] = result
                self._stored += 1
            lose = self._lose > 0
            self._lose -= 1 if lose else 0
            hold = self._hold_at is not None and self._stored == self._hold_at and status == 201
        if hold:  # until the test releases it (or the server shuts down)
            await until(self._held.is_set, 600, "the held answer to be released", poll=0.01)
        if lose:
            return web.json_response({"error": "lost"}, status=503)
        return web.json_response(result, status=status)

    # -- handlers ------------------------------------------------------------

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def _remember(self, request: web.Request) -> web.Response:
        body = request[BODY]
        if not isinstance(body, dict) or not isinstance(body.get("content"), str):
            return web.json_response({"error": "content required"}, status=400)
        user = request.match_info["user"]

        def store() -> dict[str, Any]:
            self._next += 1
            memory = {
                "id": f"m{self._next}",
                "content": body["content"],
                "metadata": body.get("metadata") or {},
                "created_at": datetime.now(UTC).isoformat(),
            }
            self.memories.setdefault(user, []).append(memory)
            return {"memory": memory}

        return await self._write(request, store)

    async def _search(self, request: web.Request) -> web.Response:
        probe = _words(str(request.query.get("q", "")))
        limit = int(request.query.get("limit", "10"))
        with self._lock:
            mine = list(self.memories.get(request.match_info["user"], []))
        hits = []
        for memory in mine:
            overlap = len(probe & _words(memory["content"]))
            if overlap:
                hits.append({**memory, "score": overlap / max(1, len(probe))})
        hits.sort(key=lambda m: -float(m["score"]))
        return web.json_response({"results": hits[:limit]})

    async def _forget(self, request: web.Request) -> web.Response:
        user, memory_id = request.match_info["user"], request.match_info["id"]
        with self._lock:
            mine = self.memories.get(user, [])
            kept = [m for m in mine if m["id"] != memory_id]
            self.memories[user] = kept
        if len(kept) == len(mine):
            return web.json_response({"error": "not found"}, status=404)
        return web.Response(status=204)

    async def _file_put(self, request: web.Request) -> web.Response:
        body = request[BODY]
        if not isinstance(body, dict) or not isinstance(body.get("content"), str):
            return web.json_response({"error": "content required"}, status=400)
        user, name = request.match_info["user"], request.match_info["name"]

        def store() -> dict[str, Any]:
            file = {
                "name": name,
                "content": body["content"],
                "size": len(body["content"]),
                "updated_at": datetime.now(UTC).isoformat(),
            }
            self.files.setdefault(user, {})[name] = file
            return {"file": {k: v for k, v in file.items() if k != "content"}}

        return await self._write(request, store)

    async def _file_get(self, request: web.Request) -> web.Response:
        with self._lock:
            file = self.files.get(request.match_info["user"], {}).get(request.match_info["name"])
        if file is None:
            return web.json_response({"error": "not found"}, status=404)
        return web.json_response({"file": file})

    async def _file_list(self, request: web.Request) -> web.Response:
        with self._lock:
            files = list(self.files.get(request.match_info["user"], {}).values())
        listed = [{k: v for k, v in f.items() if k != "content"} for f in files]
        return web.json_response({"files": listed})

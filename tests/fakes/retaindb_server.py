"""A fake RetainDB server, written from RetainDB's published REST routes.

Written from the routes and bodies of RetainDB's public reference client
(``plugins/memory/retaindb/__init__.py`` in ``NousResearch/hermes-agent``),
not from chorus's client. Base ``/v1``; every request carries
``Authorization: Bearer <key>`` (the memory and context routes also take
``X-API-Key: <key>``), else 401. Memory bodies name ``project`` and
``user_id``; data is kept per ``(project, user_id)``:

* ``POST /v1/memory`` ``{project, user_id, session_id, content, memory_type,
  importance, write_mode}`` — 201 ``{"memory": {"id", "content", ...}}`` (the
  reference client does not read this answer; the fake returns what it stored);
* ``POST /v1/memory/search`` ``{project, user_id, session_id, query, top_k,
  include_pending}`` — ``{"results": [{"id", "content", "score", ...}]}``;
* ``POST /v1/context/query`` ``{project, user_id, session_id, query,
  include_memories, max_tokens}`` — ``{"results": [...], "context": "..."}``
  (the reference client reads ``results[].content``);
* ``GET /v1/memory/profile/{user_id}?project=&include_pending=`` —
  ``{"memories": [{"id", "content", ...}]}`` (the reference reads ``memories``);
* ``DELETE /v1/memory/{id}`` — 200 ``{"deleted": true}``, 404 when unknown;
* ``POST /v1/memory/ingest/session`` ``{project, user_id, session_id,
  messages, write_mode}`` — the session is kept in :attr:`sessions` (what the
  server extracts from it is its own business);
* ``POST /v1/files`` multipart (``file``, ``path``, ``scope``) — 201
  ``{"file": {"id", "name", "path", "scope", "size", "mime_type", "rdb_uri"}}``;
  ``GET /v1/files?prefix=&limit=`` — ``{"files": [...]}``; ``GET /v1/files/{id}``
  — ``{"file": {...}}``; ``GET /v1/files/{id}/content`` — the bytes;
  ``POST /v1/files/{id}/ingest``; ``DELETE /v1/files/{id}``. Files belong to
  the API key, not to a user.

Any other route answers 404, as the real service does. No idempotency key is
published, so none is honoured: a write sent twice is stored twice.

Scripting: ``fail(status, times)`` fails the next requests; ``lose_answers(n)``
stores the next ``n`` writes and then answers 503 (a reply lost on the way, as
when the client dies); ``hold_after(n)`` stores the ``n``-th write and then
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


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message, "message": message}, status=status)


class FakeRetainDB(LoopThread):
    thread_name = "fake-retaindb"

    def __init__(self, *, api_key: str = "rdb-test-key") -> None:
        super().__init__()
        self.api_key = api_key
        self.base_url = ""
        self.memories: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.sessions: list[dict[str, Any]] = []
        self.files: dict[str, dict[str, Any]] = {}
        self.file_bytes: dict[str, bytes] = {}
        self.ingested_files: list[str] = []
        self.requests: list[tuple[str, str, Any]] = []
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
        app.router.add_post("/v1/memory", self._remember)
        app.router.add_post("/v1/memory/search", self._search)
        app.router.add_post("/v1/memory/ingest/session", self._ingest_session)
        app.router.add_get("/v1/memory/profile/{user_id}", self._profile)
        app.router.add_delete("/v1/memory/{id}", self._forget)
        app.router.add_post("/v1/context/query", self._context)
        app.router.add_post("/v1/files", self._file_upload)
        app.router.add_get("/v1/files", self._file_list)
        app.router.add_get("/v1/files/{id}", self._file_get)
        app.router.add_get("/v1/files/{id}/content", self._file_content)
        app.router.add_post("/v1/files/{id}/ingest", self._file_ingest)
        app.router.add_delete("/v1/files/{id}", self._file_delete)
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

    def memories_of(self, user: str, project: str = "default") -> list[str]:
        with self._lock:
            return [m["content"] for m in self.memories.get((project, user), [])]

    def files_under(self, prefix: str) -> dict[str, str]:
        """``path: text`` of the stored files whose path starts with ``prefix``."""
        with self._lock:
            return {
                f["path"]: self.file_bytes[f["id"]].decode("utf-8", "replace")
                for f in self.files.values()
                if f["path"].startswith(prefix)
            }

    # -- plumbing ------------------------------------------------------------

    def _authorised(self, request: web.Request) -> bool:
        if request.headers.get("Authorization") == f"Bearer {self.api_key}":
            return True
        takes_key = request.path.startswith(("/v1/memory", "/v1/context"))
        return takes_key and request.headers.get("X-API-Key") == self.api_key

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.match_info.http_exception is not None:  # no such route
            with self._lock:
                self.requests.append((request.method, request.path, None))
            return _error(request.match_info.http_exception.status, "not found")
        if not self._authorised(request):
            return _error(401, "unauthorized")
        body: Any = dict(request.query)
        if request.content_type == "application/json" and request.can_read_body:
            try:
                body = {**body, **await request.json()}
            except (ValueError, TypeError):
                return _error(400, "invalid JSON")
        elif request.content_type == "multipart/form-data":
            form = await request.post()
            body = dict(form.items())
        request[BODY] = body
        with self._lock:
            self.requests.append((request.method, request.path, body))
            status = self._failures.popleft() if self._failures else None
        if status is not None:
            return _error(status, "unavailable")
        response: web.StreamResponse = await handler(request)
        return response

    async def _write(self, store: Any) -> web.Response:
        """Run ``store()``; the lost-answer and held-answer scripts apply."""
        if self.delay:
            await asyncio.sleep(self.delay)
        with self._lock:
            result = store()
            self._stored += 1
            lose = self._lose > 0
            self._lose -= 1 if lose else 0
            hold = self._hold_at is not None and self._stored == self._hold_at
        if hold:  # until the test releases it (or the server shuts down)
            await until(self._held.is_set, 600, "the held answer to be released", poll=0.01)
        if lose:
            return _error(503, "lost")
        return web.json_response(result, status=201)

    @staticmethod
    def _scope(body: Any) -> tuple[str, str] | None:
        """``(project, user_id)`` of a memory body, None when either is missing."""
        if not isinstance(body, dict):
            return None
        project, user = body.get("project"), body.get("user_id")
        if not isinstance(project, str) or not project or not isinstance(user, str) or not user:
            return None
        return project, user

    def _ranked(self, scope: tuple[str, str], query: str, top_k: int) -> list[dict[str, Any]]:
        probe = _words(query)
        with self._lock:
            mine = list(self.memories.get(scope, []))
        hits = []
        for memory in mine:
            overlap = len(probe & _words(memory["content"]))
            if overlap:
                hits.append({**memory, "score": overlap / max(1, len(probe))})
        hits.sort(key=lambda m: -float(m["score"]))
        return hits[:top_k]

    # -- memory --------------------------------------------------------------

    async def _remember(self, request: web.Request) -> web.Response:
        body = request[BODY]
        scope = self._scope(body)
        if scope is None:
            return _error(400, "project and user_id are required")
        if not isinstance(body.get("content"), str) or not body["content"]:
            return _error(400, "content is required")

        def store() -> dict[str, Any]:
            self._next += 1
            memory = {
                "id": f"mem_{self._next}",
                "content": body["content"],
                "memory_type": body.get("memory_type") or "factual",
                "importance": body.get("importance", 0.5),
                "session_id": body.get("session_id"),
                "user_id": scope[1],
                "created_at": _now(),
            }
            self.memories.setdefault(scope, []).append(memory)
            return {"memory": memory}

        return await self._write(store)

    async def _search(self, request: web.Request) -> web.Response:
        body = request[BODY]
        scope = self._scope(body)
        if scope is None or not isinstance(body.get("query"), str):
            return _error(400, "project, user_id and query are required")
        top_k = body.get("top_k", 8)
        limit = top_k if isinstance(top_k, int) and 0 < top_k <= 100 else 8
        return web.json_response({"results": self._ranked(scope, body["query"], limit)})

    async def _context(self, request: web.Request) -> web.Response:
        body = request[BODY]
        scope = self._scope(body)
        if scope is None or not isinstance(body.get("query"), str):
            return _error(400, "project, user_id and query are required")
        hits = self._ranked(scope, body["query"], 8) if body.get("include_memories", True) else []
        context = "\n".join(f"- {m['content']}" for m in hits)
        return web.json_response({"results": hits, "context": context})

    async def _profile(self, request: web.Request) -> web.Response:
        project = request.query.get("project", "")
        if not project:
            return _error(400, "project is required")
        with self._lock:
            mine = list(self.memories.get((project, request.match_info["user_id"]), []))
        return web.json_response({"memories": mine})

    async def _forget(self, request: web.Request) -> web.Response:
        memory_id = request.match_info["id"]
        with self._lock:
            for scope, mine in self.memories.items():
                kept = [m for m in mine if m["id"] != memory_id]
                if len(kept) != len(mine):
                    self.memories[scope] = kept
                    return web.json_response({"deleted": True, "id": memory_id})
        return _error(404, "memory not found")

    async def _ingest_session(self, request: web.Request) -> web.Response:
        body = request[BODY]
        scope = self._scope(body)
        messages = body.get("messages") if isinstance(body, dict) else None
        if scope is None or not isinstance(messages, list):
            return _error(400, "project, user_id and messages are required")

        def store() -> dict[str, Any]:
            self.sessions.append(
                {
                    "project": scope[0],
                    "user_id": scope[1],
                    "session_id": body.get("session_id"),
                    "messages": messages,
                }
            )
            return {"accepted": True, "messages": len(messages)}

        return await self._write(store)

    # -- files ---------------------------------------------------------------

    async def _file_upload(self, request: web.Request) -> web.Response:
        body = request[BODY]
        upload = body.get("file") if isinstance(body, dict) else None
        if not isinstance(upload, web.FileField):
            return _error(400, "a multipart 'file' part is required")
        data = upload.file.read()
        path = str(body.get("path") or f"/{upload.filename}")
        scope = str(body.get("scope") or "PROJECT").upper()
        if scope not in ("USER", "PROJECT", "ORG"):
            return _error(400, "scope must be USER, PROJECT or ORG")

        def store() -> dict[str, Any]:
            self._next += 1
            file_id = f"file_{self._next}"
            self.files[file_id] = {
                "id": file_id,
                "name": upload.filename,
                "path": path,
                "scope": scope,
                "size": len(data),
                "mime_type": upload.content_type,
                "rdb_uri": f"rdb://files/{file_id}",
                "created_at": _now(),
            }
            self.file_bytes[file_id] = data
            return {"file": dict(self.files[file_id])}

        return await self._write(store)

    async def _file_list(self, request: web.Request) -> web.Response:
        prefix = request.query.get("prefix", "")
        try:
            limit = int(request.query.get("limit", "50"))
        except ValueError:
            return _error(400, "limit must be an integer")
        with self._lock:
            listed = [dict(f) for f in self.files.values() if f["path"].startswith(prefix)]
        return web.json_response({"files": listed[:limit]})

    async def _file_get(self, request: web.Request) -> web.Response:
        with self._lock:
            file = self.files.get(request.match_info["id"])
        if file is None:
            return _error(404, "file not found")
        return web.json_response({"file": dict(file)})

    async def _file_content(self, request: web.Request) -> web.Response:
        with self._lock:
            file = self.files.get(request.match_info["id"])
            data = self.file_bytes.get(request.match_info["id"], b"")
        if file is None:
            return _error(404, "file not found")
        return web.Response(body=data, content_type=file["mime_type"] or "text/plain")

    async def _file_ingest(self, request: web.Request) -> web.Response:
        file_id = request.match_info["id"]
        with self._lock:
            known = file_id in self.files
            if known:
                self.ingested_files.append(file_id)
        if not known:
            return _error(404, "file not found")
        return web.json_response({"file_id": file_id, "status": "ingested"})

    async def _file_delete(self, request: web.Request) -> web.Response:
        with self._lock:
            file = self.files.pop(request.match_info["id"], None)
            self.file_bytes.pop(request.match_info["id"], None)
        if file is None:
            return _error(404, "file not found")
        return web.json_response({"deleted": True})

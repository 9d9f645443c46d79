"""A fake Supermemory API on 127.0.0.1, written from the supermemory 3.x SDK's resources.

Routes and shapes are those the official SDK (``supermemory`` 3.x, a Stainless
client) sends and parses; every other route answers 404, the old
``/v3/memories`` and ``/v3/search`` included. Every request needs
``Authorization: Bearer <api_key>`` (401 otherwise). Data is kept per
container tag: nothing of one tag is found through another.

* ``POST /v3/documents`` (``client.add`` / ``documents.add``) ``{"content",
  "containerTag" | "containerTags": [tag], "customId"?, "metadata"?, ...}``:
  answers ``{"id", "status": "queued"}``. Exactly one tag is accepted here;
  a tag or ``customId`` outside ``[A-Za-z0-9_.:-]{1,100}`` is a 400. The same
  ``customId`` again updates that document (same id).
* ``POST /v4/conversations`` (a raw request; the SDK has no method for it)
  ``{"conversationId" (1-255 chars), "messages": [{"role", "content"}, ...]
  (at least one), "containerTags"?, "metadata"?}``: ingests, or updates the
  conversation of that id; answers ``{"id", "conversationId", "status"}``.
* ``POST /v4/search`` (``search.memories``) ``{"q", "containerTag" |
  "containerTags", "limit"?, ...}``: ``{"results": [{"id", "memory",
  "similarity", "updatedAt", "metadata"}], "total", "timing"}``, best first;
  without a tag the whole account is searched, as the real API does.
* ``POST /v4/profile`` (``client.profile``) ``{"containerTag", "q"?}``:
  ``{"profile": {"static": [...], "dynamic": [...]}, "searchResults"?}``
  (``searchResults`` shaped as the search answer, when ``q`` is given).
* ``DELETE /v4/memories`` (``memories.forget``) ``{"containerTag", "id"? |
  "content"?}``: ``{"id", "forgotten": true}``, or 404 when that container
  has no such memory.

* ``POST /v3/documents/list`` (``documents.list``) ``{"containerTags"?,
  "includeContent"?, "limit"?, "page"?}``: ``{"memories": [{"id", "customId",
  "containerTags", "createdAt", "updatedAt", "status", "type", "metadata",
  "content"?}], "pagination": {"currentPage", "totalItems", "totalPages",
  "limit"}}`` (documents and conversations alike).
* ``DELETE /v3/documents/bulk`` (``documents.delete_bulk``) ``{"containerTags"
  | "ids"}``: the documents, and the memories extracted from them;
  ``{"success", "deletedCount", "containerTags"?}``.

What Supermemory extracts is scripted (no model runs here): a document
becomes one memory with its content; a conversation one memory per user
message. The profile's ``static`` facts are the memories of documents, its
``dynamic`` ones the latest three of conversations. Search scores a memory by
the words it shares with ``q``.

``fail(status, times)`` makes the next authorised requests fail; ``hang(seconds)``
makes every request wait that long first (0 stops it).
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
import uuid
from collections import deque
from typing import Any

from aiohttp import web

from .loop_thread import LoopThread

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset({"a", "an", "the", "is", "i", "my", "do", "of", "to", "in", "and", "what"})
_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,100}")
BODY = web.RequestKey("body", object)


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _bad(message: str, status: int = 400) -> web.Response:
    return web.json_response({"error": message}, status=status)


class FakeSupermemory(LoopThread):
    thread_name = "fake-supermemory"

    def __init__(self, *, api_key: str = "sm-test-key") -> None:
        super().__init__()
        self.api_key = api_key
        self.base_url = ""
        self.documents: dict[str, dict[str, Any]] = {}
        """Documents and conversations by id: ``tag``, ``kind``, ``custom_id``,
        ``content`` or ``messages``, ``metadata``."""
        self.memories: dict[str, dict[str, Any]] = {}
        """Extracted memories by id: ``tag``, ``source`` (a document id), ``kind``,
        ``memory``, ``metadata``, ``forgotten``."""
        self.requests: list[tuple[str, str, Any]] = []
        """``(method, path, JSON body)`` of every authorised request."""
        self.unauthorised = 0
        self._failures: deque[int] = deque()
        self._hang = 0.0
        self._lock = threading.Lock()

    async def _serve(self) -> None:
        app = web.Application(middlewares=[self._middleware])
        app.router.add_post("/v3/documents", self._add)
        app.router.add_post("/v4/conversations", self._conversation)
        app.router.add_post("/v4/search", self._search)
        app.router.add_post("/v4/profile", self._profile)
        app.router.add_delete("/v4/memories", self._forget)
        app.router.add_post("/v3/documents/list", self._list_documents)
        app.router.add_delete("/v3/documents/bulk", self._delete_bulk)
        await self._listen(app)
        self.base_url = f"http://127.0.0.1:{self.port}"

    # -- scripting and inspection --------------------------------------------

    def fail(self, status: int = 503, *, times: int = 1) -> None:
        with self._lock:
            self._failures.extend([status] * times)

    def hang(self, seconds: float) -> None:
        self._hang = seconds

    def memories_of(self, tag: str) -> list[str]:
        """The text of every memory of ``tag`` not forgotten, oldest first."""
        with self._lock:
            return [
                m["memory"]
                for m in self.memories.values()
                if m["tag"] == tag and not m["forgotten"]
            ]

    def documents_of(self, tag: str) -> list[dict[str, Any]]:
        with self._lock:
            return [
                dict(d) for d in self.documents.values() if d["tag"] == tag and d["kind"] == "doc"
            ]

    def conversations_of(self, tag: str) -> list[dict[str, Any]]:
        with self._lock:
            return [
                dict(d)
                for d in self.documents.values()
                if d["tag"] == tag and d["kind"] == "conversation"
            ]

    def paths(self) -> list[str]:
        return [f"{method} {path}" for method, path, _ in self.requests]

    # -- plumbing ------------------------------------------------------------

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if self._hang:
            await asyncio.sleep(self._hang)
        if request.headers.get("Authorization") != f"Bearer {self.api_key}":
            self.unauthorised += 1
            return _bad("Unauthorized", 401)
        body: Any = None
        if request.can_read_body:
            try:
                body = await request.json()
            except ValueError:
                return _bad("Invalid JSON")
        self.requests.append((request.method, request.path, body))
        with self._lock:
            status = self._failures.popleft() if self._failures else None
        if status is not None:
            return _bad("unavailable", status)
        request[BODY] = body if isinstance(body, dict) else {}
        response: web.StreamResponse = await handler(request)
        return response

    @staticmethod
    def _tags(body: dict[str, Any]) -> list[str] | None:
        """The body's container tags (``containerTag`` or ``containerTags``); None when invalid."""
        tags: Any = body.get("containerTags")
        if "containerTag" in body:
            tags = [body["containerTag"]]
        if tags is None:
            return []
        if not isinstance(tags, list) or not all(
            isinstance(t, str) and _NAME.fullmatch(t) for t in tags
        ):
            return None
        return list(tags)

    def _store(
        self, tag: str, kind: str, key: str | None, data: dict[str, Any], texts: list[str]
    ) -> str:
        """Add or update (same ``key``) a document, and replace its extracted memories."""
        with self._lock:
            doc_id = next(
                (
                    d["id"]
                    for d in self.documents.values()
                    if key is not None and d["kind"] == kind and d["custom_id"] == key
                ),
                uuid.uuid4().hex[:22],
            )
            self.documents.pop(doc_id, None)
            self.documents[doc_id] = {
                "id": doc_id,
                "tag": tag,
                "kind": kind,
                "custom_id": key,
                **data,
            }
            for memory_id in [m for m, v in self.memories.items() if v["source"] == doc_id]:
                del self.memories[memory_id]
            for text in texts:
                memory_id = uuid.uuid4().hex[:22]
                self.memories[memory_id] = {
                    "id": memory_id,
                    "tag": tag,
                    "source": doc_id,
                    "kind": kind,
                    "memory": text,
                    "metadata": data.get("metadata") or {},
                    "forgotten": False,
                    "updated": _now(),
                }
        return doc_id

    def _ranked(self, tags: list[str], query: str, limit: int) -> dict[str, Any]:
        probe = _words(query)
        with self._lock:
            seen = [
                dict(m)
                for m in self.memories.values()
                if not m["forgotten"] and (not tags or m["tag"] in tags)
            ]
        scored = []
        for memory in seen:
            overlap = len(probe & _words(memory["memory"]))
            if overlap:
                scored.append((overlap / max(1, len(probe)), memory))
        scored.sort(key=lambda pair: -pair[0])
        results = [
            {
                "id": m["id"],
                "memory": m["memory"],
                "similarity": round(score, 4),
                "updatedAt": m["updated"],
                "metadata": m["metadata"],
            }
            for score, m in scored[:limit]
        ]
        return {"results": results, "total": len(results), "timing": 1}

    # -- handlers ------------------------------------------------------------

    async def _add(self, request: web.Request) -> web.Response:
        body = request[BODY]
        tags = self._tags(body)
        content = body.get("content")
        custom = body.get("customId")
        if not tags or len(tags) != 1:
            return _bad("exactly one valid container tag is required here")
        if not isinstance(content, str) or not content.strip():
            return _bad("content is required")
        if custom is not None and not (isinstance(custom, str) and _NAME.fullmatch(custom)):
            return _bad("customId: max 100 characters, alphanumeric with - _ . only")
        metadata = body.get("metadata") or {}
        doc_id = self._store(
            tags[0], "doc", custom, {"content": content, "metadata": metadata}, [content]
        )
        return web.json_response({"id": doc_id, "status": "queued"})

    async def _conversation(self, request: web.Request) -> web.Response:
        body = request[BODY]
        tags = self._tags(body)
        conversation = body.get("conversationId")
        messages = body.get("messages")
        if not tags or len(tags) != 1:
            return _bad("exactly one valid container tag is required here")
        if not isinstance(conversation, str) or not 1 <= len(conversation) <= 255:
            return _bad("conversationId: 1-255 characters")
        if not isinstance(messages, list) or not messages:
            return _bad("messages: at least one")
        for message in messages:
            if not isinstance(message, dict) or message.get("role") not in (
                "user",
                "assistant",
                "system",
                "tool",
            ):
                return _bad("messages: each needs a role")
            if not isinstance(message.get("content"), str):
                return _bad("messages: each needs its content")
        said = [m["content"] for m in messages if m["role"] == "user" and m["content"].strip()]
        data = {"messages": messages, "metadata": body.get("metadata") or {}}
        doc_id = self._store(tags[0], "conversation", conversation, data, said)
        return web.json_response({"id": doc_id, "conversationId": conversation, "status": "queued"})

    async def _search(self, request: web.Request) -> web.Response:
        body = request[BODY]
        tags = self._tags(body)
        query = body.get("q")
        if tags is None:
            return _bad("invalid container tag")
        if not isinstance(query, str) or not query.strip():
            return _bad("q is required")
        limit = body.get("limit", 10)
        if not isinstance(limit, int) or not 1 <= limit <= 100:
            return _bad("limit: 1-100")
        return web.json_response(self._ranked(tags, query, limit))

    async def _profile(self, request: web.Request) -> web.Response:
        body = request[BODY]
        tag = body.get("containerTag")
        if not isinstance(tag, str) or not _NAME.fullmatch(tag):
            return _bad("containerTag is required")
        with self._lock:
            mine = [m for m in self.memories.values() if m["tag"] == tag and not m["forgotten"]]
        static = [m["memory"] for m in mine if m["kind"] == "doc"]
        dynamic = [m["memory"] for m in mine if m["kind"] == "conversation"][-3:]
        answer: dict[str, Any] = {"profile": {"static": static, "dynamic": dynamic}}
        query = body.get("q")
        if isinstance(query, str) and query.strip():
            answer["searchResults"] = self._ranked([tag], query, 10)
        return web.json_response(answer)

    async def _list_documents(self, request: web.Request) -> web.Response:
        body = request[BODY] if isinstance(request[BODY], dict) else {}
        tags = self._tags(body)
        if tags is None:
            return _bad("containerTags: invalid")
        limit, page = int(body.get("limit") or 50), int(body.get("page") or 1)
        with self._lock:
            docs = [dict(d) for d in self.documents.values() if not tags or d["tag"] in tags]
        listed = []
        for doc in docs[(page - 1) * limit : page * limit]:
            item: dict[str, Any] = {
                "id": doc["id"],
                "customId": doc["custom_id"],
                "containerTags": [doc["tag"]],
                "createdAt": doc.get("created_at", ""),
                "updatedAt": doc.get("created_at", ""),
                "status": "done",
                "type": "text",
                "metadata": doc.get("metadata") or {},
            }
            if body.get("includeContent"):
                item["content"] = doc.get("content") or "\n".join(
                    f"{m['role']}: {m['content']}" for m in doc.get("messages", [])
                )
            listed.append(item)
        pages = (len(docs) + limit - 1) // limit
        pagination = {
            "currentPage": page,
            "totalItems": len(docs),
            "totalPages": pages,
            "limit": limit,
        }
        return web.json_response({"memories": listed, "pagination": pagination})

    async def _delete_bulk(self, request: web.Request) -> web.Response:
        body = request[BODY] if isinstance(request[BODY], dict) else {}
        tags, ids = self._tags(body), body.get("ids")
        if tags is None or (not tags and not isinstance(ids, list)):
            return _bad("containerTags or ids is required")
        with self._lock:
            gone = [
                d
                for d, doc in self.documents.items()
                if doc["tag"] in tags or (isinstance(ids, list) and d in ids)
            ]
            for doc_id in gone:
                del self.documents[doc_id]
            for memory_id in [m for m, v in self.memories.items() if v["source"] in gone]:
                del self.memories[memory_id]
        answer: dict[str, Any] = {"success": True, "deletedCount": len(gone)}
        if tags:
            answer["containerTags"] = tags
        return web.json_response(answer)

    async def _forget(self, request: web.Request) -> web.Response:
        body = request[BODY]
        tag = body.get("containerTag")
        memory_id, content = body.get("id"), body.get("content")
        if not isinstance(tag, str) or not _NAME.fullmatch(tag):
            return _bad("containerTag is required")
        if not isinstance(memory_id, str) and not isinstance(content, str):
            return _bad("id or content is required")
        with self._lock:
            found = next(
                (
                    m
                    for m in self.memories.values()
                    if m["tag"] == tag
                    and not m["forgotten"]
                    and (
                        m["id"] == memory_id
                        if isinstance(memory_id, str)
                        else m["memory"] == content
                    )
                ),
                None,
            )
            if found is not None:
                found["forgotten"] = True
        if found is None:
            return _bad("Memory not found", 404)
        return web.json_response({"id": found["id"], "forgotten": True})

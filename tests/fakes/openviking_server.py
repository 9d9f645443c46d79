"""A fake OpenViking server: the ``/api/v1`` subset the openviking provider speaks.

An aiohttp server on 127.0.0.1 (its own loop in a thread, like the other
fakes), shaped after the real ``openviking-server`` 0.5.2 in ``trusted`` auth
mode (tests/real_servers/test_openviking_real.py runs chorus against that).
Every ``/api/v1`` request must carry ``X-API-Key: <api_key>`` (else 401
``UNAUTHENTICATED``), ``X-OpenViking-Account: default`` and
``X-OpenViking-User`` (else 400); all data is kept per user. Answers use
OpenViking's envelope ``{"status", "result", "error"}``, ``error`` being
``null`` on success.

URIs name their user: ``viking://user/<user>/…``, with ``viking://~/…`` the
requesting user's own; the uid-less ``viking://user/memories`` is 400
``INVALID_URI`` and another user's space is 403 ``PERMISSION_DENIED``, as on
the real server.

* ``POST /api/v1/sessions``, ``GET /api/v1/sessions/{id}?auto_create=``
  (meta with ``message_count`` pending, ``commit_count`` and ``user``),
  ``POST /api/v1/sessions/{id}/messages``, ``POST /api/v1/sessions/{id}/commit``:
  a commit archives the pending messages and turns each user message into a
  memory ``viking://user/<user>/memories/mem-<n>.md`` whose abstract is its text;
* ``GET /api/v1/sessions`` (the user's sessions: ``session_id``, ``uri``,
  ``is_dir``), ``DELETE /api/v1/sessions/{id}`` (404 for one it does not know);
* ``POST /api/v1/search/find``: the user's memories under ``target_uri``
  sharing words with the query;
* ``GET /api/v1/fs/ls``, ``GET /api/v1/fs/stat``, ``GET /api/v1/content/read``,
  ``DELETE /api/v1/fs`` (ok, ``estimated_deleted_count`` 0, where nothing is;
  a directory only with ``recursive=true``, else 400);
* ``GET /health`` (no key needed).

``honour_user=False`` plays the server in ``api_key`` mode with a user key:
the ``X-OpenViking-User`` header is ignored and every request is the key's
user ``default``. ``fail(status, times)`` makes the next requests fail;
``fail_path(suffix, after=n)`` lets ``n`` requests whose path ends with
``suffix`` through and fails the rest with 503 (to cut a commit short, as a
crash or an outage would).
"""

from __future__ import annotations

import re
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .loop_thread import LoopThread

_WORD = re.compile(r"[a-z0-9]+")
_RESERVED = {"memories", "resources", "skills", "peers", "privacy", "sessions"}
BODY = web.RequestKey("body", object)
USER = web.RequestKey("user", str)


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2}


@dataclass
class FakeSession:
    messages: list[dict[str, str]] = field(default_factory=list)
    archived: list[dict[str, str]] = field(default_factory=list)
    commit_count: int = 0


def _ok(result: Any) -> web.Response:
    return web.json_response({"status": "ok", "result": result, "error": None})


def _err(code: str, status: int, message: str = "") -> web.Response:
    body = {"status": "error", "error": {"code": code, "message": message or code}}
    return web.json_response(body, status=status)


class FakeOpenViking(LoopThread):
    thread_name = "fake-openviking"

    def __init__(self, *, api_key: str = "ov-test-key", honour_user: bool = True) -> None:
        super().__init__()
        self.api_key = api_key
        self.honour_user = honour_user
        self.base_url = ""
        self.sessions: dict[tuple[str, str], FakeSession] = {}
        self.memories: dict[str, dict[str, str]] = {}
        """user -> {uri: text}."""
        self.requests: list[tuple[str, str, str, Any]] = []
        """``(method, path, user, body)`` of every authorised request."""
        self.commits: list[tuple[str, str, list[dict[str, str]]]] = []
        """``(user, session id, messages)`` of every commit that had messages."""
        self._failing: tuple[str, int] | None = None
        self._failures: deque[int] = deque()
        self._lock = threading.Lock()
        self._next = 0

    async def _serve(self) -> None:
        app = web.Application(middlewares=[self._middleware])
        app.router.add_get("/health", self._health)
        app.router.add_post("/api/v1/sessions", self._create)
        app.router.add_get("/api/v1/sessions", self._list_sessions)
        app.router.add_delete("/api/v1/sessions/{sid}", self._delete_session)
        app.router.add_get("/api/v1/sessions/{sid}", self._meta)
        app.router.add_post("/api/v1/sessions/{sid}/messages", self._add)
        app.router.add_post("/api/v1/sessions/{sid}/commit", self._commit)
        app.router.add_post("/api/v1/search/find", self._find)
        app.router.add_get("/api/v1/fs/ls", self._ls)
        app.router.add_get("/api/v1/fs/stat", self._stat)
        app.router.add_get("/api/v1/content/read", self._read)
        app.router.add_delete("/api/v1/fs", self._rm)
        await self._listen(app)
        self.base_url = f"http://127.0.0.1:{self.port}"

    # -- scripting -----------------------------------------------------------

    def fail(self, status: int = 503, *, times: int = 1) -> None:
        with self._lock:
            self._failures.extend([status] * times)

    def fail_path(self, suffix: str | None, *, after: int = 0) -> None:
        """Fail requests ending with ``suffix`` after ``after`` of them; None stops it."""
        with self._lock:
            self._failing = None if suffix is None else (suffix, after)

    def memories_of(self, user: str) -> list[str]:
        with self._lock:
            return list(self.memories.get(user, {}).values())

    def users(self) -> set[str]:
        with self._lock:
            return {user for user, _ in self.sessions} | set(self.memories)

    def add_memory(self, user: str, text: str) -> str:
        with self._lock:
            self._next += 1
            uri = f"viking://user/{user}/memories/mem-{self._next}.md"
            self.memories.setdefault(user, {})[uri] = text
            return uri

    # -- plumbing ------------------------------------------------------------

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path.startswith("/api/"):
            if request.headers.get("X-API-Key") != self.api_key:
                return _err("UNAUTHENTICATED", 401, "missing or invalid API key")
            if request.headers.get("X-OpenViking-Account") != "default":
                return _err("INVALID_ARGUMENT", 400, "X-OpenViking-Account required")
            user = request.headers.get("X-OpenViking-User", "")
            if not re.fullmatch(r"[a-zA-Z0-9_-]+", user):
                return _err("INVALID_ARGUMENT", 400, "X-OpenViking-User required")
            request[USER] = user if self.honour_user else "default"
            body: Any = dict(request.query)
            if request.can_read_body:
                try:
                    body = await request.json()
                except ValueError:
                    return _err("INVALID_ARGUMENT", 400, "invalid JSON")
            request[BODY] = body
            with self._lock:
                self.requests.append((request.method, request.path, user, body))
                status = self._failures.popleft() if self._failures else None
                if status is None and self._failing and request.path.endswith(self._failing[0]):
                    suffix, left = self._failing
                    self._failing = (suffix, left - 1)
                    status = 503 if left <= 0 else None
            if status is not None:
                return _err("INTERNAL", status, "unavailable")
        response: web.StreamResponse = await handler(request)
        return response

    def _session(self, request: web.Request, create: bool) -> FakeSession | None:
        key = (request[USER], request.match_info["sid"])
        with self._lock:
            if key not in self.sessions and create:
                self.sessions[key] = FakeSession()
            return self.sessions.get(key)

    # -- handlers ------------------------------------------------------------

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def _create(self, request: web.Request) -> web.Response:
        sid = str((request[BODY] or {}).get("session_id") or f"auto-{len(self.sessions)}")
        with self._lock:
            self.sessions.setdefault((request[USER], sid), FakeSession())
        return _ok({"session_id": sid, "user": {"user_id": request[USER]}})

    async def _list_sessions(self, request: web.Request) -> web.Response:
        user = request[USER]
        with self._lock:
            sids = sorted(sid for owner, sid in self.sessions if owner == user)
        return _ok(
            [
                {"session_id": sid, "uri": f"viking://user/{user}/sessions/{sid}", "is_dir": True}
                for sid in sids
            ]
        )

    async def _delete_session(self, request: web.Request) -> web.Response:
        key = (request[USER], request.match_info["sid"])
        with self._lock:
            gone = self.sessions.pop(key, None)
        if gone is None:
            return _err("NOT_FOUND", 404, f"Session {key[1]} not found")
        return _ok({"session_id": key[1]})

    async def _meta(self, request: web.Request) -> web.Response:
        create = str(request.query.get("auto_create", "")).lower() == "true"
        session = self._session(request, create)
        if session is None:
            return _err("NOT_FOUND", 404, "session not found")
        user, sid = request[USER], request.match_info["sid"]
        meta = {
            "session_id": sid,
            "message_count": len(session.messages),
            "commit_count": session.commit_count,
            "uri": f"viking://user/{user}/sessions/{sid}",
            "user": {"account_id": "default", "user_id": user},
        }
        return _ok(meta)

    async def _add(self, request: web.Request) -> web.Response:
        body = request[BODY]
        if not isinstance(body, dict) or body.get("role") not in ("user", "assistant"):
            return _err("INVALID_ARGUMENT", 400, "role and content required")
        session = self._session(request, True)
        assert session is not None
        with self._lock:
            session.messages.append({"role": body["role"], "content": str(body["content"])})
            count = len(session.messages)
        return _ok({"session_id": request.match_info["sid"], "message_count": count})

    async def _commit(self, request: web.Request) -> web.Response:
        session = self._session(request, False)
        if session is None:
            return _err("NOT_FOUND", 404, "session not found")
        user, sid = request[USER], request.match_info["sid"]
        with self._lock:
            messages, session.messages = session.messages, []
            session.archived.extend(messages)
            session.commit_count += 1
            if messages:
                self.commits.append((user, sid, messages))
        for message in messages:
            if message["role"] == "user":
                self.add_memory(user, message["content"])
        return _ok({"session_id": sid, "status": "accepted", "task_id": f"task-{sid}"})

    def _uri(self, request: web.Request, raw: Any) -> str | web.Response:
        """``raw`` as a canonical URI of the requesting user's space, or the real server's error."""
        uri = str(raw or "").rstrip("/")
        user = request[USER]
        parts = uri.removeprefix("viking://").split("/")
        if not uri.startswith("viking://") or ".." in parts:
            return _err("INVALID_URI", 400, f"Invalid URI: {uri}")
        if parts[0] == "~":
            return "/".join([f"viking://user/{user}", *parts[1:]])
        if parts[0] != "user" or len(parts) < 2:
            return _err("PERMISSION_DENIED", 403, f"Access denied for {uri}")
        if parts[1] in _RESERVED and parts[1] != user:
            return _err("INVALID_URI", 400, f"'{uri}' no longer expands to the current user")
        if parts[1] != user:
            return _err("PERMISSION_DENIED", 403, f"Access denied for {uri}")
        return uri

    async def _find(self, request: web.Request) -> web.Response:
        raw = request[BODY]
        body: dict[str, Any] = raw if isinstance(raw, dict) else {}
        target = self._uri(request, body.get("target_uri") or "viking://~")
        if isinstance(target, web.Response):
            return target
        probe = _words(str(body.get("query") or ""))
        scored: list[dict[str, Any]] = []
        for uri, text in self.memories.get(request[USER], {}).items():
            overlap = len(probe & _words(text))
            if overlap and uri.startswith(target + "/"):
                hit = {"context_type": "memory", "uri": uri, "level": 2, "abstract": text}
                scored.append({**hit, "score": overlap / len(probe)})
        scored.sort(key=lambda hit: -float(hit["score"]))
        limit = int(body.get("limit") or 10)
        return _ok(
            {"memories": scored[:limit], "resources": [], "skills": [], "total": len(scored)}
        )

    def _children(self, user: str, uri: str) -> dict[str, bool]:
        """The entries right under ``uri`` (``uri -> is a directory``)."""
        children: dict[str, bool] = {}
        for memory in self.memories.get(user, {}):
            if memory.startswith(uri + "/"):
                head, _, rest = memory[len(uri) + 1 :].partition("/")
                children[f"{uri}/{head}"] = bool(rest)
        return children

    async def _ls(self, request: web.Request) -> web.Response:
        uri = self._uri(request, request.query.get("uri"))
        if isinstance(uri, web.Response):
            return uri
        children = self._children(request[USER], uri)
        if not children and uri != f"viking://user/{request[USER]}":
            return _err("NOT_FOUND", 404, f"File not found: {uri}")
        return _ok([{"uri": u, "isDir": d, "size": 0} for u, d in sorted(children.items())])

    async def _stat(self, request: web.Request) -> web.Response:
        uri = self._uri(request, request.query.get("uri"))
        if isinstance(uri, web.Response):
            return uri
        if uri in self.memories.get(request[USER], {}):
            return _ok({"uri": uri, "name": uri.rsplit("/", 1)[1], "isDir": False})
        if self._children(request[USER], uri):
            return _ok({"uri": uri, "name": uri.rsplit("/", 1)[1], "isDir": True})
        return _err("NOT_FOUND", 404, f"File not found: {uri}")

    async def _read(self, request: web.Request) -> web.Response:
        uri = self._uri(request, request.query.get("uri"))
        if isinstance(uri, web.Response):
            return uri
        text = self.memories.get(request[USER], {}).get(uri)
        return _err("NOT_FOUND", 404, f"File not found: {uri}") if text is None else _ok(text)

    async def _rm(self, request: web.Request) -> web.Response:
        uri = self._uri(request, request.query.get("uri"))
        if isinstance(uri, web.Response):
            return uri
        recursive = str(request.query.get("recursive", "")).lower() == "true"
        with self._lock:
            mine = self.memories.get(request[USER], {})
            below = [u for u in mine if u.startswith(uri + "/")]
            if below and not recursive:
                return _err("INVALID_ARGUMENT", 400, f"{uri} is a directory")
            text = mine.pop(uri, None)
            for u in below:
                del mine[u]
        # the real server answers ok where nothing is, only the count tells
        count = len(below) + (0 if text is None else 1)
        return _ok({"uri": uri, "estimated_deleted_count": count})

"""A fake Honcho ``/v3`` server: the routes honcho-ai 2.7's sync client calls for chorus.

``FakeHoncho`` is an aiohttp server on 127.0.0.1 (its own loop in a thread, like
the other fakes). With an ``api_key`` (the default) every request must carry
``Authorization: Bearer <api_key>``, else 401, as the SDK sends it. Data is kept
per workspace: peers, sessions (with each member's session config), messages,
conclusions and peer cards. Routes (all under ``/v3/workspaces``), each shaped
as ``honcho/http/routes.py`` builds it and ``honcho/api_types.py`` parses it:

* ``POST ""``: get-or-create a workspace ``{"id"}`` (the SDK's first call);
* ``POST /{ws}/peers``: get-or-create ``{"id", "configuration"}`` (a given
  configuration replaces the peer's);
* ``POST /{ws}/sessions``: get-or-create ``{"id", "metadata", "peers": {peer:
  {"observe_me", "observe_others"}}}``;
* ``POST /{ws}/sessions/{s}/messages``: ``{"messages": [{"peer_id", "content",
  "metadata"}]}`` (1-100 of them, content at most :data:`MAX_MESSAGE_SIZE`
  characters, else 422); creates the session and its authors, like the real
  server. Then a synchronous stand-in for Honcho's deriver: each sentence of
  three words or more becomes an ``explicit`` conclusion of its author about
  themself, unless the author is not observed (``observe_me: false`` on the
  peer or in the session);
* ``POST /{ws}/sessions/{s}/messages/list``: a page (``page``/``size`` query),
  ``filters`` of ``peer_id`` and ``metadata`` (every key equal);
* ``GET /{ws}/sessions/{s}/context``: the session's latest messages within
  ``tokens`` (a token is four characters here), no summary, and with
  ``peer_target`` that peer's representation and card;
* ``GET /{ws}/peers/{p}/context``: ``{"peer_id", "target_id", "representation",
  "peer_card"}``; ``GET``/``PUT /{ws}/peers/{p}/card``;
* ``POST /{ws}/peers/{p}/chat``: the dialectic, ``{"content"}`` made of the
  peer's best-matching conclusions (None when nothing matches);
* ``POST /{ws}/conclusions`` (create, 1-100), ``POST /{ws}/conclusions/query``
  (``filters`` must name ``observer_id`` and ``observed_id``),
  ``POST /{ws}/conclusions/list`` (a page of those the ``filters`` match),
  ``GET``/``DELETE /{ws}/conclusions/{id}``.

A representation is markdown: one ``- `` line per conclusion, the ones that
match ``search_query`` best first (cosine of
:func:`tests.fakes.openai_server.embed_text` vectors), else the newest.
``fail(status, times)`` makes the next requests fail; ``delay`` holds every
answer back that many seconds; ``leaky = True`` makes the conclusion query and
the message list ignore their filters (a broken server, to show the provider
still keeps other people's facts out and still syncs every turn).
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

MAX_MESSAGE_SIZE = 25_000
"""The longest message content the server accepts (Honcho's ``MAX_MESSAGE_SIZE``)."""
DIMENSIONS = 256
THRESHOLD = 0.1
NAME = re.compile(r"[A-Za-z0-9_-]{1,512}")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
BODY = web.RequestKey("body", object)


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _score(query: str, text: str) -> float:
    a, b = embed_text(query, DIMENSIONS), embed_text(text, DIMENSIONS)
    return sum(x * y for x, y in zip(a, b, strict=True))


def sentences(content: str) -> list[str]:
    """What the fake deriver concludes from one message: each sentence of 3+ words."""
    found: list[str] = []
    for sentence in _SENTENCE.split(content.strip()):
        text = sentence.strip()
        if len(text.split()) >= 3 and text not in found:
            found.append(text)
    return found


@dataclass
class Workspace:
    id: str
    created_at: str = field(default_factory=_now)
    peers: dict[str, dict[str, Any]] = field(default_factory=dict)
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    members: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    """session id -> peer id -> that peer's session config."""
    messages: list[dict[str, Any]] = field(default_factory=list)
    conclusions: dict[str, dict[str, Any]] = field(default_factory=dict)
    cards: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    """(observer, observed) -> peer card."""


def _error(status: int, detail: str) -> web.Response:
    return web.json_response({"detail": detail}, status=status)


class FakeHoncho(LoopThread):
    thread_name = "fake-honcho"

    def __init__(self, *, api_key: str | None = "hch-test-key") -> None:
        super().__init__()
        self.api_key = api_key
        self.base_url = ""
        self.workspaces: dict[str, Workspace] = {}
        self.requests: list[tuple[str, str, Any]] = []
        """``(method, path, JSON body or query)`` of every authorised request."""
        self.delay = 0.0
        self.leaky = False
        self._failures: deque[int] = deque()
        self._lock = threading.Lock()

    async def _serve(self) -> None:
        app = web.Application(middlewares=[self._middleware])
        ws, add = "/v3/workspaces/{ws}", app.router
        add.add_post("/v3/workspaces", self._workspace)
        add.add_post(f"{ws}/peers", self._get_or_create_peer)
        add.add_post(f"{ws}/sessions", self._session)
        add.add_post(f"{ws}/sessions/{{s}}/messages", self._add_messages)
        add.add_post(f"{ws}/sessions/{{s}}/messages/list", self._list_messages)
        add.add_get(f"{ws}/sessions/{{s}}/context", self._session_context)
        add.add_get(f"{ws}/peers/{{p}}/context", self._peer_context)
        add.add_get(f"{ws}/peers/{{p}}/card", self._get_card)
        add.add_put(f"{ws}/peers/{{p}}/card", self._set_card)
        add.add_post(f"{ws}/peers/{{p}}/chat", self._chat)
        add.add_post(f"{ws}/conclusions", self._create_conclusions)
        add.add_post(f"{ws}/conclusions/query", self._query_conclusions)
        add.add_post(f"{ws}/conclusions/list", self._list_conclusions)
        add.add_get(f"{ws}/conclusions/{{c}}", self._get_conclusion)
        add.add_delete(f"{ws}/conclusions/{{c}}", self._delete_conclusion)
        await self._listen(app)
        self.base_url = f"http://127.0.0.1:{self.port}"

    # -- scripting and inspection --------------------------------------------

    def fail(self, status: int = 503, *, times: int = 1) -> None:
        """The next ``times`` authorised requests answer ``status``."""
        with self._lock:
            self._failures.extend([status] * times)

    def paths(self) -> list[str]:
        return [path for _, path, _ in self.requests]

    def workspace(self, workspace_id: str = "chorus") -> Workspace:
        """The workspace's data (an empty one, not stored, when it does not exist)."""
        with self._lock:
            return self.workspaces.get(workspace_id) or Workspace(workspace_id)

    def messages_of(self, session_id: str, workspace_id: str = "chorus") -> list[tuple[str, str]]:
        """``(peer_id, content)`` of a session's messages, in order."""
        ws = self.workspace(workspace_id)
        with self._lock:
            return [
                (m["peer_id"], m["content"]) for m in ws.messages if m["session_id"] == session_id
            ]

    def conclusions_of(self, peer_id: str, workspace_id: str = "chorus") -> list[str]:
        """The texts of ``peer_id``'s conclusions about themself, oldest first."""
        ws = self.workspace(workspace_id)
        with self._lock:
            return [
                c["content"]
                for c in ws.conclusions.values()
                if c["observer_id"] == c["observed_id"] == peer_id
            ]

    def set_card(self, peer_id: str, card: list[str], workspace_id: str = "chorus") -> None:
        """What Honcho's dreamer would do: give ``peer_id`` a card."""
        with self._lock:
            ws = self.workspaces.setdefault(workspace_id, Workspace(workspace_id))
            ws.cards[(peer_id, peer_id)] = list(card)

    # -- plumbing ------------------------------------------------------------

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if self.api_key is not None and request.headers.get("Authorization") != (
            f"Bearer {self.api_key}"
        ):
            return _error(401, "Invalid or missing API key")
        body: Any = dict(request.query)
        if request.can_read_body:
            try:
                body = await request.json()
            except ValueError:
                return _error(422, "Invalid JSON")
        self.requests.append((request.method, request.path, body))
        with self._lock:
            status = self._failures.popleft() if self._failures else None
        if self.delay:
            await asyncio.sleep(self.delay)
        if status is not None:
            return _error(status, "Service unavailable")
        request[BODY] = body
        if "ws" in request.match_info and request.match_info["ws"] not in self.workspaces:
            return _error(404, "Workspace not found")
        response: web.StreamResponse = await handler(request)
        return response

    def _ws(self, request: web.Request) -> Workspace:
        return self.workspaces[request.match_info["ws"]]

    @staticmethod
    def _body(request: web.Request) -> dict[str, Any]:
        body = request[BODY]
        return body if isinstance(body, dict) else {}

    @staticmethod
    def _peer(ws: Workspace, peer_id: str, configuration: Any = None) -> dict[str, Any]:
        peer = ws.peers.get(peer_id)
        if peer is None:
            peer = ws.peers[peer_id] = {
                "id": peer_id,
                "workspace_id": ws.id,
                "created_at": _now(),
                "metadata": {},
                "configuration": {},
            }
        if isinstance(configuration, dict):
            peer["configuration"] = dict(configuration)
        return peer

    def _ensure_session(
        self, ws: Workspace, session_id: str, peers: dict[str, Any], metadata: Any = None
    ) -> dict[str, Any]:
        session = ws.sessions.get(session_id)
        if session is None:
            session = ws.sessions[session_id] = {
                "id": session_id,
                "is_active": True,
                "workspace_id": ws.id,
                "metadata": {},
                "configuration": {},
                "created_at": _now(),
            }
        if isinstance(metadata, dict):
            session["metadata"] = dict(metadata)
        members = ws.members.setdefault(session_id, {})
        for peer_id, config in peers.items():
            self._peer(ws, peer_id)
            members.setdefault(peer_id, {}).update(config if isinstance(config, dict) else {})
        return session

    def _observed(self, ws: Workspace, session_id: str, peer_id: str) -> bool:
        peer_config = ws.peers[peer_id]["configuration"]
        session_config = ws.members.get(session_id, {}).get(peer_id, {})
        return peer_config.get("observe_me") is not False and (
            session_config.get("observe_me") is not False
        )

    def _conclude(
        self, ws: Workspace, observer: str, observed: str, content: str, session_id: Any
    ) -> dict[str, Any]:
        conclusion = {
            "id": uuid.uuid4().hex,
            "content": content,
            "observer_id": observer,
            "observed_id": observed,
            "session_id": session_id if isinstance(session_id, str) else None,
            "level": "explicit",
            "source_ids": None,
            "times_derived": 1,
            "created_at": _now(),
        }
        ws.conclusions[conclusion["id"]] = conclusion
        return conclusion

    def _ranked(
        self, ws: Workspace, observer: str, observed: str, query: str | None, limit: int
    ) -> list[dict[str, Any]]:
        mine = [
            c
            for c in ws.conclusions.values()
            if c["observer_id"] == observer and c["observed_id"] == observed
        ]
        if not query:
            return list(reversed(mine))[:limit]
        scored = [(score, c) for c in mine if (score := _score(query, c["content"])) >= THRESHOLD]
        scored.sort(key=lambda pair: -pair[0])
        return [c for _, c in scored[:limit]]

    def _representation(
        self, ws: Workspace, observer: str, observed: str, query: str | None, limit: int
    ) -> str:
        return "\n".join(
            f"- {c['content']}" for c in self._ranked(ws, observer, observed, query, limit)
        )

    # -- workspaces, sessions, messages --------------------------------------

    async def _workspace(self, request: web.Request) -> web.Response:
        workspace_id = self._body(request).get("id")
        if not isinstance(workspace_id, str) or not NAME.fullmatch(workspace_id):
            return _error(422, "id must match ^[a-zA-Z0-9_-]+$")
        with self._lock:
            ws = self.workspaces.setdefault(workspace_id, Workspace(workspace_id))
        return web.json_response(
            {"id": ws.id, "metadata": {}, "configuration": {}, "created_at": ws.created_at}
        )

    async def _session(self, request: web.Request) -> web.Response:
        body, ws = self._body(request), self._ws(request)
        session_id, peers = body.get("id"), body.get("peers") or {}
        if not isinstance(session_id, str) or not NAME.fullmatch(session_id):
            return _error(422, "id must match ^[a-zA-Z0-9_-]+$")
        if not isinstance(peers, dict) or not all(NAME.fullmatch(str(p)) for p in peers):
            return _error(422, "peers must map peer ids to configs")
        with self._lock:
            session = self._ensure_session(ws, session_id, peers, body.get("metadata"))
            return web.json_response(dict(session))

    async def _add_messages(self, request: web.Request) -> web.Response:
        ws, session_id = self._ws(request), request.match_info["s"]
        items = self._body(request).get("messages")
        if not isinstance(items, list) or not 1 <= len(items) <= 100:
            return _error(422, "messages must hold 1 to 100 messages")
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("peer_id"), str):
                return _error(422, "every message needs a peer_id")
            if not isinstance(item.get("content"), str) or len(item["content"]) > MAX_MESSAGE_SIZE:
                return _error(422, f"content must be a string of at most {MAX_MESSAGE_SIZE}")
        created = []
        with self._lock:
            self._ensure_session(ws, session_id, {str(i["peer_id"]): {} for i in items})
            for item in items:
                message = {
                    "id": uuid.uuid4().hex,
                    "content": item["content"],
                    "peer_id": item["peer_id"],
                    "session_id": session_id,
                    "metadata": dict(item.get("metadata") or {}),
                    "created_at": _now(),
                    "workspace_id": ws.id,
                    "token_count": len(item["content"]) // 4 + 1,
                }
                ws.messages.append(message)
                created.append(dict(message))
                if self._observed(ws, session_id, message["peer_id"]):
                    known = set(self._texts(ws, message["peer_id"]))
                    for text in sentences(message["content"]):
                        if text not in known:
                            self._conclude(
                                ws, message["peer_id"], message["peer_id"], text, session_id
                            )
        return web.json_response(created, status=201)

    @staticmethod
    def _texts(ws: Workspace, peer_id: str) -> list[str]:
        return [
            c["content"]
            for c in ws.conclusions.values()
            if c["observer_id"] == c["observed_id"] == peer_id
        ]

    async def _list_messages(self, request: web.Request) -> web.Response:
        ws, session_id = self._ws(request), request.match_info["s"]
        filters = self._body(request).get("filters") or {}
        page, size = int(request.query.get("page", 1)), int(request.query.get("size", 50))
        metadata = filters.get("metadata") if isinstance(filters.get("metadata"), dict) else {}
        with self._lock:
            found = [
                dict(m)
                for m in ws.messages
                if m["session_id"] == session_id
                and (
                    self.leaky
                    or (
                        filters.get("peer_id", m["peer_id"]) == m["peer_id"]
                        and all(m["metadata"].get(k) == v for k, v in metadata.items())
                    )
                )
            ]
        if request.query.get("reverse") == "true":
            found.reverse()
        items = found[(page - 1) * size : page * size]
        pages = (len(found) + size - 1) // size
        return web.json_response(
            {"items": items, "page": page, "size": size, "total": len(found), "pages": pages}
        )

    async def _session_context(self, request: web.Request) -> web.Response:
        ws, session_id, query = self._ws(request), request.match_info["s"], request.query
        tokens = int(query.get("tokens", 100_000))
        target = query.get("peer_target")
        with self._lock:
            if session_id not in ws.sessions:
                return _error(404, "Session not found")
            latest: list[dict[str, Any]] = []
            for message in reversed([m for m in ws.messages if m["session_id"] == session_id]):
                tokens -= message["token_count"]
                if tokens < 0:
                    break
                latest.insert(0, dict(message))
            body: dict[str, Any] = {"id": session_id, "messages": latest, "summary": None}
            if target:
                top_k = int(query.get("search_top_k", 10))
                search = query.get("search_query")
                body["peer_representation"] = self._representation(
                    ws, target, target, search, top_k
                )
                body["peer_card"] = ws.cards.get((target, target))
        return web.json_response(body)

    # -- peers ---------------------------------------------------------------

    async def _get_or_create_peer(self, request: web.Request) -> web.Response:
        body, ws = self._body(request), self._ws(request)
        peer_id = body.get("id")
        if not isinstance(peer_id, str) or not NAME.fullmatch(peer_id):
            return _error(422, "id must match ^[a-zA-Z0-9_-]+$")
        with self._lock:
            return web.json_response(dict(self._peer(ws, peer_id, body.get("configuration"))))

    async def _peer_context(self, request: web.Request) -> web.Response:
        ws, peer_id, query = self._ws(request), request.match_info["p"], request.query
        target = query.get("target") or peer_id
        search = query.get("search_query")
        limit = int(query.get("search_top_k" if search else "max_conclusions", 25))
        with self._lock:
            representation = self._representation(ws, peer_id, target, search, limit)
            card = ws.cards.get((peer_id, target))
        return web.json_response(
            {
                "peer_id": peer_id,
                "target_id": target,
                "representation": representation,
                "peer_card": card,
            }
        )

    async def _get_card(self, request: web.Request) -> web.Response:
        ws, peer_id = self._ws(request), request.match_info["p"]
        target = request.query.get("target") or peer_id
        with self._lock:
            return web.json_response({"peer_card": ws.cards.get((peer_id, target))})

    async def _set_card(self, request: web.Request) -> web.Response:
        ws, peer_id = self._ws(request), request.match_info["p"]
        card = self._body(request).get("peer_card")
        if not isinstance(card, list) or not all(isinstance(f, str) for f in card):
            return _error(422, "peer_card must be a list of strings")
        target = request.query.get("target") or peer_id
        with self._lock:
            self._peer(ws, peer_id)
            ws.cards[(peer_id, target)] = list(card)
        return web.json_response({"peer_card": card})

    async def _chat(self, request: web.Request) -> web.Response:
        ws, peer_id, body = self._ws(request), request.match_info["p"], self._body(request)
        query = body.get("query")
        if not isinstance(query, str) or not 1 <= len(query) <= 10_000 or body.get("stream"):
            return _error(422, "query must be 1-10000 characters; streaming is not faked")
        target = body.get("target") or peer_id
        with self._lock:
            self._peer(ws, peer_id)
            best = self._ranked(ws, peer_id, target, query, 3)
        content = " ".join(c["content"] for c in best) if best else None
        return web.json_response({"content": content})

    # -- conclusions ---------------------------------------------------------

    async def _create_conclusions(self, request: web.Request) -> web.Response:
        ws, items = self._ws(request), self._body(request).get("conclusions")
        if not isinstance(items, list) or not 1 <= len(items) <= 100:
            return _error(422, "conclusions must hold 1 to 100 conclusions")
        for item in items:
            content = item.get("content") if isinstance(item, dict) else None
            if not isinstance(content, str) or not 1 <= len(content) <= 65535:
                return _error(422, "content must be 1-65535 characters")
            if not all(isinstance(item.get(k), str) for k in ("observer_id", "observed_id")):
                return _error(422, "observer_id and observed_id are required")
        with self._lock:
            created = []
            for item in items:
                for peer_id in (item["observer_id"], item["observed_id"]):
                    self._peer(ws, peer_id)
                created.append(
                    dict(
                        self._conclude(
                            ws,
                            item["observer_id"],
                            item["observed_id"],
                            item["content"],
                            item.get("session_id"),
                        )
                    )
                )
        return web.json_response(created, status=201)

    async def _query_conclusions(self, request: web.Request) -> web.Response:
        ws, body = self._ws(request), self._body(request)
        filters = body.get("filters") if isinstance(body.get("filters"), dict) else {}
        observer, observed = filters.get("observer_id"), filters.get("observed_id")
        query = body.get("query")
        if not isinstance(observer, str) or not isinstance(observed, str):
            return _error(422, "filters must name observer_id and observed_id")
        if not isinstance(query, str) or not query:
            return _error(422, "query is required")
        top_k = int(body.get("top_k", 10))
        with self._lock:
            if self.leaky:
                everyone = {(c["observer_id"], c["observed_id"]) for c in ws.conclusions.values()}
                found = [c for pair in everyone for c in self._ranked(ws, *pair, query, top_k)]
            else:
                found = self._ranked(ws, observer, observed, query, top_k)
        return web.json_response([dict(c) for c in found])

    async def _list_conclusions(self, request: web.Request) -> web.Response:
        """``POST .../conclusions/list``: a page of the conclusions the filters match."""
        ws, body = self._ws(request), self._body(request)
        filters = body.get("filters") if isinstance(body.get("filters"), dict) else {}
        page, size = int(request.query.get("page", 1)), int(request.query.get("size", 50))
        with self._lock:
            found = [
                dict(c)
                for c in ws.conclusions.values()
                if self.leaky or all(c.get(k) == v for k, v in filters.items())
            ]
        if request.query.get("reverse") == "true":
            found.reverse()
        items = found[(page - 1) * size : page * size]
        pages = (len(found) + size - 1) // size
        return web.json_response(
            {"items": items, "page": page, "size": size, "total": len(found), "pages": pages}
        )

    async def _get_conclusion(self, request: web.Request) -> web.Response:
        ws = self._ws(request)
        with self._lock:
            conclusion = ws.conclusions.get(request.match_info["c"])
        if conclusion is None:
            return _error(404, "Conclusion not found")
        return web.json_response(dict(conclusion))

    async def _delete_conclusion(self, request: web.Request) -> web.Response:
        ws = self._ws(request)
        with self._lock:
            conclusion = ws.conclusions.pop(request.match_info["c"], None)
        if conclusion is None:
            return _error(404, "Conclusion not found")
        return web.Response(status=204)

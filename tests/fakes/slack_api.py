"""A local fake of the Slack Web API, and signed Events API requests to the gateway.

``FakeSlack`` runs an aiohttp server on 127.0.0.1 in a background thread with its
own event loop (like ``FakeOpenAI``). Point slack_sdk at ``api_url``. It serves
``auth.test``, ``chat.postMessage``, ``chat.update`` and ``conversations.replies``
(with cursor paging) over one store of channel messages, checks the bearer token,
and records every call. Tests script it: ``rate_limit()`` answers the next calls of
a method with 429 + ``Retry-After``, ``fail()`` with a server error.

``person()`` records a message from a person (so ``conversations.replies`` knows
it) and returns its event; ``post_event()`` sends an ``event_callback`` to the
gateway signed like Slack does (``v0`` HMAC-SHA256 over ``v0:{timestamp}:{body}``),
optionally marked as a retry.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from .loop_thread import LoopThread

TOKEN = "xoxb-fake-0000-secret-token"
SIGNING_SECRET = "fake-signing-secret-7d1e9c"
BOT_USER_ID = "UBOT0001"
BOT_ID = "BBOT0001"
BOT_NAME = "chorus"
TEAM_ID = "TTEAM001"


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    at: float
    status: int = 200


@dataclass
class Posted:
    """A message the bot posted, as the channel shows it now (edits applied)."""

    channel: str
    ts: str
    text: str
    thread_ts: str | None
    history: list[str] = field(default_factory=list)


class FakeSlack(LoopThread):
    thread_name = "fake-slack"

    def __init__(self) -> None:
        super().__init__()
        self.token = TOKEN
        self.calls: list[Call] = []
        self.posted: list[Posted] = []
        self.store: list[dict[str, Any]] = []
        self._ts = itertools.count(1)
        self._scripted: list[tuple[str, int, str, int]] = []
        self._lock = threading.Lock()

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    # ------------------------------------------------------------------ lifecycle

    async def _serve(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        await self._listen(app)

    # ------------------------------------------------------------------- scripting

    def next_ts(self) -> str:
        n = next(self._ts)
        return f"{1_700_000_000 + n}.{n:06d}"

    def person(
        self,
        text: str,
        *,
        user: str,
        channel: str,
        channel_type: str = "im",
        thread_ts: str | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """A message from a person, stored in the channel; returns its ``message`` event."""
        event: dict[str, Any] = {
            "type": "message",
            "channel": channel,
            "channel_type": channel_type,
            "user": user,
            "text": text,
            "ts": self.next_ts(),
            **extra,
        }
        if thread_ts is not None:
            event["thread_ts"] = thread_ts
        with self._lock:
            self.store.append(dict(event))
        return event

    def rate_limit(self, method: str, times: int, *, retry_after: int = 0) -> None:
        """The next ``times`` calls of ``method`` get 429 with ``Retry-After``."""
        with self._lock:
            self._scripted.extend([(method, 429, "ratelimited", retry_after)] * times)

    def fail(self, method: str, times: int, *, status: int = 500) -> None:
        with self._lock:
            self._scripted.extend([(method, status, "internal_error", 0)] * times)

    # ---------------------------------------------------------------- inspection

    def calls_of(self, method: str, status: int | None = 200) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method and status in (None, c.status)]

    def posted_in(self, channel: str) -> list[Posted]:
        with self._lock:
            return [p for p in self.posted if p.channel == channel]

    async def wait_posted(self, channel: str, count: int, timeout: float = 15.0) -> list[Posted]:
        await self.wait_for(lambda: len(self.posted_in(channel)) >= count, timeout, "posts")
        return self.posted_in(channel)

    # ---------------------------------------------------------------------- server

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params: dict[str, Any] = dict(request.query)
        if request.content_type == "application/json":
            params.update(await request.json())
        elif request.can_read_body:
            params.update(await request.post())
        call = Call(method, params, time.monotonic())
        with self._lock:
            self.calls.append(call)
            scripted = next((s for s in self._scripted if s[0] == method), None)
            if scripted is not None:
                self._scripted.remove(scripted)
        if scripted is not None:
            _, status, error, retry_after = scripted
            call.status = status
            headers = {"Retry-After": str(retry_after)} if status == 429 else {}
            return web.json_response({"ok": False, "error": error}, status=status, headers=headers)
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return web.json_response({"ok": False, "error": "invalid_auth"})
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        if handler is None:
            return web.json_response({"ok": False, "error": "unknown_method"}, status=404)
        result: dict[str, Any] = handler(params)
        return web.json_response({"ok": "error" not in result, **result})

    def _m_auth_test(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"user": BOT_NAME, "user_id": BOT_USER_ID, "bot_id": BOT_ID, "team_id": TEAM_ID}

    def _m_chat_postMessage(self, params: dict[str, Any]) -> dict[str, Any]:
        text = str(params.get("text") or "")
        if not text.strip():
            return {"error": "no_text"}
        channel = str(params["channel"])
        thread = params.get("thread_ts")
        ts = self.next_ts()
        message = {"type": "message", "user": BOT_USER_ID, "bot_id": BOT_ID, "text": text}
        message.update({"ts": ts, "channel": channel})
        if thread:
            message["thread_ts"] = str(thread)
        with self._lock:
            self.store.append(message)
            self.posted.append(Posted(channel, ts, text, str(thread) if thread else None, [text]))
        return {"channel": channel, "ts": ts, "message": message}

    def _m_chat_update(self, params: dict[str, Any]) -> dict[str, Any]:
        channel, ts, text = str(params["channel"]), str(params["ts"]), str(params.get("text"))
        with self._lock:
            found = [p for p in self.posted if (p.channel, p.ts) == (channel, ts)]
            if not found:
                return {"error": "message_not_found"}
            found[0].text = text
            found[0].history.append(text)
            for stored in self.store:
                if (stored.get("channel"), stored["ts"]) == (channel, ts):
                    stored["text"] = text
        return {"channel": channel, "ts": ts, "text": text}

    def _m_conversations_replies(self, params: dict[str, Any]) -> dict[str, Any]:
        channel, root = str(params["channel"]), str(params["ts"])
        limit = int(params.get("limit") or 100)
        start = int(params.get("cursor") or 0)
        with self._lock:
            thread = [
                dict(m)
                for m in self.store
                if m.get("channel") == channel and root in (m["ts"], m.get("thread_ts"))
            ]
        thread.sort(key=lambda m: float(m["ts"]))
        page = thread[start : start + limit]
        more = start + limit < len(thread)
        cursor = str(start + limit) if more else ""
        return {"messages": page, "has_more": more, "response_metadata": {"next_cursor": cursor}}


def sign(body: str, timestamp: str, secret: str = SIGNING_SECRET) -> str:
    base = f"v0:{timestamp}:{body}".encode()
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


_event_ids = itertools.count(1)


def event_callback(event: dict[str, Any], *, event_id: str | None = None) -> dict[str, Any]:
    """``event`` wrapped as the Events API delivers it."""
    return {
        "token": "unused-verification-token",
        "team_id": TEAM_ID,
        "api_app_id": "AAPP0001",
        "event": event,
        "type": "event_callback",
        "event_id": event_id or f"Ev{next(_event_ids):08d}",
        "event_time": int(time.time()),
        "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}],
    }


async def post_event(
    url: str,
    payload: dict[str, Any],
    *,
    secret: str = SIGNING_SECRET,
    retry_num: int | None = None,
    timestamp: str | None = None,
) -> tuple[int, str]:
    """POST ``payload`` to ``url`` signed with ``secret``; returns (status, body)."""
    body = json.dumps(payload)
    timestamp = str(int(time.time())) if timestamp is None else timestamp
    headers = {
        "Content-Type": "application/json",
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": sign(body, timestamp, secret),
    }
    if retry_num is not None:
        headers["X-Slack-Retry-Num"] = str(retry_num)
        headers["X-Slack-Retry-Reason"] = "http_timeout"
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=body, headers=headers) as response,
    ):
        return response.status, await response.text()

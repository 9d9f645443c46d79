"""A local fake of the Slack Web API, Socket Mode, ``response_url`` and file downloads.

``FakeSlack`` runs an aiohttp server on 127.0.0.1 in a background thread with its
own event loop (like ``FakeOpenAI``). Point slack_sdk at ``api_url``. It serves
``auth.test``, ``chat.postMessage``, ``chat.postEphemeral`` (shown to one person, never
stored in the channel; ``user_not_in_channel`` for someone in ``away``),
``chat.update``, ``conversations.replies``
(with cursor paging) over one store of channel messages, file uploads as slack_sdk's
``files_upload_v2`` makes them (``files.getUploadURLExternal``, a POST of the bytes to
the upload URL it names, ``files.completeUploadExternal`` sharing them into a channel,
or a thread of it with ``thread_ts``: ``shared``), reactions, assistant thread statuses
and Home tabs (``slack_surfaces``), ``users.info`` for the
people a test adds, ``apps.connections.open`` and the Socket Mode websocket
(``slack_socket``), the ``response_url`` of slash commands and private file
downloads. It checks the bearer token (the app-level one for
``apps.connections.open``) and records every call. Tests script it:
``rate_limit()`` answers the next calls of a method with 429 + ``Retry-After``,
``fail()`` with a server error; posting into a channel of ``outside`` (one the
bot is not a member of) is refused with ``not_in_channel``, into one of ``archived``
with ``is_archived``, into one of ``gone`` (deleted, or private and hidden from the
bot) with ``channel_not_found``.

``person()`` records a message from a person (so ``conversations.replies`` knows
it) and returns its event; signed HTTP requests to the gateway are in
``slack_requests``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .loop_thread import LoopThread
from .slack_requests import BOT_USER_ID, SIGNING_SECRET, TEAM_ID
from .slack_socket import APP_TOKEN, SocketModeServer
from .slack_surfaces import SlackSurfaces, valid_blocks

__all__ = ["APP_TOKEN", "BOT_USER_ID", "SIGNING_SECRET", "TEAM_ID", "TOKEN", "FakeSlack"]

TOKEN = "xoxb-fake-0000-secret-token"
BOT_ID = "BBOT0001"
BOT_NAME = "chorus"


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    at: float
    status: int = 200


@dataclass
class Ephemeral:
    """A message only ``user`` sees, in ``channel`` (Slack keeps no copy of it)."""

    channel: str
    user: str
    text: str
    thread_ts: str | None


UPLOAD_LIMIT = 1024 * 1024 * 1024
"""The largest file Slack takes (1 GB)."""


@dataclass
class Upload:
    """A file announced by ``files.getUploadURLExternal``; ``data`` once uploaded."""

    file_id: str
    filename: str
    length: int
    data: bytes | None = None


@dataclass
class SharedFile:
    """An uploaded file shared into a channel by ``files.completeUploadExternal``."""

    channel: str
    file_id: str
    filename: str
    title: str
    data: bytes
    comment: str
    thread_ts: str | None = None
    """The thread it was shared into (``completeUploadExternal``'s ``thread_ts``)."""


@dataclass
class Posted:
    """A message the bot posted, as the channel shows it now (edits applied)."""

    channel: str
    ts: str
    text: str
    thread_ts: str | None
    history: list[str] = field(default_factory=list)
    blocks: list[dict[str, Any]] | None = None
    """Block Kit blocks posted with the message (``blocks``), as given."""


class FakeSlack(SocketModeServer, SlackSurfaces, LoopThread):
    thread_name = "fake-slack"

    def __init__(self) -> None:
        super().__init__()
        self.token = TOKEN
        self.calls: list[Call] = []
        self.posted: list[Posted] = []
        self.store: list[dict[str, Any]] = []
        self.users: dict[str, dict[str, Any]] = {}
        self.files: dict[str, tuple[bytes, str]] = {}
        self.downloads: list[tuple[str, str]] = []
        """(file id, the Authorization header it came with)."""
        self.responses: dict[str, list[dict[str, Any]]] = {}
        self.uploads: dict[str, Upload] = {}
        self.shared: list[SharedFile] = []
        """Files shared into channels, in order."""
        """What was posted to each ``response_url``, by its key."""
        self._ts = itertools.count(1)
        self._keys = itertools.count(1)
        self.outside: set[str] = set()
        """Channels the bot is not a member of."""
        self.archived: set[str] = set()
        """Archived channels: posting there is ``is_archived``."""
        self.gone: set[str] = set()
        """Channels the bot cannot see (deleted, private): posting is ``channel_not_found``."""
        self.ephemeral: list[Ephemeral] = []
        self.away: set[tuple[str, str]] = set()
        """``(channel, user)``: that person is not in that channel."""
        self._scripted: list[tuple[str, int, str, int]] = []
        self._lock = threading.Lock()
        self._init_socket()
        self._init_surfaces()

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    # ------------------------------------------------------------------ lifecycle

    async def _serve(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_post("/respond/{key}", self._respond)
        app.router.add_get("/files/{id}/{name}", self._file)
        app.router.add_post("/upload/{id}", self._upload)
        self._socket_routes(app)
        await self._listen(app)

    def _call(self, coro: Any) -> Any:
        assert self._loop is not None, "FakeSlack is not started"
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=10)

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

    def add_user(self, user_id: str, display_name: str, real_name: str = "") -> None:
        """A person ``users.info`` knows."""
        profile = {"display_name": display_name, "real_name": real_name or display_name}
        with self._lock:
            self.users[user_id] = {
                "id": user_id,
                "team_id": TEAM_ID,
                "name": display_name.lower().replace(" ", "."),
                "real_name": profile["real_name"],
                "profile": profile,
            }

    def add_file(self, data: bytes, *, mimetype: str, name: str = "file") -> dict[str, Any]:
        """A file shared in Slack; returns the file object a message event carries."""
        file_id = f"F{len(self.files) + 1:08d}"
        with self._lock:
            self.files[file_id] = (data, mimetype)
        url = f"http://127.0.0.1:{self.port}/files/{file_id}/{name}"
        return {
            "id": file_id,
            "name": name,
            "mimetype": mimetype,
            "filetype": mimetype.rpartition("/")[2],
            "size": len(data),
            "url_private": url,
            "url_private_download": url + "?download=1",
        }

    def response_url(self) -> str:
        """A fresh ``response_url`` (as a slash command carries one)."""
        key = f"r{next(self._keys)}"
        with self._lock:
            self.responses[key] = []
        return f"http://127.0.0.1:{self.port}/respond/{key}"

    def responses_to(self, url: str) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.responses.get(url.rpartition("/")[2], []))

    async def wait_response(self, url: str, timeout: float = 15.0) -> dict[str, Any]:
        await self.wait_for(lambda: bool(self.responses_to(url)), timeout, "a response_url post")
        return self.responses_to(url)[0]

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
        token = self.app_token if method == "apps.connections.open" else self.token
        if request.headers.get("Authorization") != f"Bearer {token}":
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
        if channel in self.gone:
            return {"error": "channel_not_found"}
        if channel in self.archived:
            return {"error": "is_archived"}
        if channel in self.outside:
            return {"error": "not_in_channel"}
        thread = params.get("thread_ts")
        blocks = params.get("blocks")
        if isinstance(blocks, str):  # form-encoded: a JSON string
            blocks = json.loads(blocks)
        if blocks is not None and not valid_blocks(blocks):
            return {"error": "invalid_blocks"}
        ts = self.next_ts()
        message = {"type": "message", "user": BOT_USER_ID, "bot_id": BOT_ID, "text": text}
        message.update({"ts": ts, "channel": channel})
        if thread:
            message["thread_ts"] = str(thread)
        with self._lock:
            self.store.append(message)
            self._posted_in_thread(channel, str(thread) if thread else None)
            self.posted.append(
                Posted(channel, ts, text, str(thread) if thread else None, [text], blocks)
            )
        return {"channel": channel, "ts": ts, "message": message}

    def _m_chat_postEphemeral(self, params: dict[str, Any]) -> dict[str, Any]:
        text = str(params.get("text") or "")
        if not text.strip():
            return {"error": "no_text"}
        channel, user = str(params.get("channel") or ""), str(params.get("user") or "")
        if not channel:
            return {"error": "channel_not_found"}
        if channel in self.outside:
            return {"error": "not_in_channel"}
        if not user or (channel, user) in self.away:
            return {"error": "user_not_in_channel"}
        thread = params.get("thread_ts")
        with self._lock:
            self.ephemeral.append(Ephemeral(channel, user, text, str(thread) if thread else None))
        return {"message_ts": self.next_ts()}

    def _m_chat_update(self, params: dict[str, Any]) -> dict[str, Any]:
        channel, ts, text = str(params["channel"]), str(params["ts"]), str(params.get("text"))
        blocks = params.get("blocks")  # absent: the message keeps its blocks
        if isinstance(blocks, str):  # form-encoded: a JSON string
            blocks = json.loads(blocks)
        if blocks is not None and not valid_blocks(blocks):
            return {"error": "invalid_blocks"}
        with self._lock:
            found = [p for p in self.posted if (p.channel, p.ts) == (channel, ts)]
            if not found:
                return {"error": "message_not_found"}
            found[0].text = text
            if blocks is not None:
                found[0].blocks = blocks
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

    def _m_files_getUploadURLExternal(self, params: dict[str, Any]) -> dict[str, Any]:
        filename = str(params.get("filename") or "")
        try:
            length = int(params.get("length") or 0)
        except ValueError:
            length = 0
        if not filename or length <= 0:
            return {"error": "invalid_arguments"}
        if length > UPLOAD_LIMIT:
            return {"error": "file_size_limit_exceeded"}
        with self._lock:
            file_id = f"FUP{len(self.uploads) + 1:07d}"
            self.uploads[file_id] = Upload(file_id, filename, length)
        return {"upload_url": f"http://127.0.0.1:{self.port}/upload/{file_id}", "file_id": file_id}

    async def _upload(self, request: web.Request) -> web.Response:
        """The upload URL: the file's bytes as the body (or a multipart ``file`` field)."""
        file_id = request.match_info["id"]
        if request.content_type.startswith("multipart/"):
            form = await request.post()
            field = form.get("file")
            data = field.file.read() if field is not None and not isinstance(field, str) else b""
        else:
            data = await request.read()
        with self._lock:
            upload = self.uploads.get(file_id)
            if upload is None or upload.data is not None:
                return web.Response(status=404, text="not found")
            if len(data) != upload.length:
                return web.Response(status=400, text="length mismatch")
            upload.data = data
        return web.Response(text=f"OK - {len(data)}")

    def _m_files_completeUploadExternal(self, params: dict[str, Any]) -> dict[str, Any]:
        try:
            files = json.loads(str(params.get("files") or ""))
        except ValueError:
            return {"error": "invalid_arguments"}
        channel = str(params.get("channel_id") or "")
        if channel in self.gone:
            return {"error": "channel_not_found"}
        if channel in self.outside:
            return {"error": "not_in_channel"}
        comment = str(params.get("initial_comment") or "")
        thread = str(params["thread_ts"]) if params.get("thread_ts") else None
        done = []
        with self._lock:
            for item in files:
                upload = self.uploads.get(str(item.get("id")))
                if upload is None or upload.data is None:
                    return {"error": "file_not_found"}
                title = str(item.get("title") or upload.filename)
                if channel:
                    self.shared.append(
                        SharedFile(
                            channel,
                            upload.file_id,
                            upload.filename,
                            title,
                            upload.data,
                            comment,
                            thread,
                        )
                    )
                done.append({"id": upload.file_id, "name": upload.filename, "title": title})
        return {"files": done}

    def _m_users_info(self, params: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            user = self.users.get(str(params.get("user")))
        return {"user": user} if user is not None else {"error": "user_not_found"}

    async def _respond(self, request: web.Request) -> web.Response:
        key = request.match_info["key"]
        body = await request.json()
        with self._lock:
            if key not in self.responses:
                return web.Response(status=404, text="expired_url")
            self.responses[key].append(body)
        return web.Response(text="ok")

    async def _file(self, request: web.Request) -> web.Response:
        file_id = request.match_info["id"]
        auth = request.headers.get("Authorization", "")
        with self._lock:
            self.downloads.append((file_id, auth))
            found = self.files.get(file_id)
        if found is None:
            return web.Response(status=404)
        if auth != f"Bearer {self.token}":
            # Slack answers a login page, not the file
            return web.Response(text="<html>sign in</html>", content_type="text/html")
        data, mimetype = found
        return web.Response(body=data, content_type=mimetype)

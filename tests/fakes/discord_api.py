"""A local fake of Discord: the REST API and the gateway websocket.

``FakeDiscord`` runs an aiohttp server on 127.0.0.1 in a background thread with its
own event loop (like ``FakeOpenAI``). Point ``discord.api_url`` at ``api_url``;
``GET /gateway/bot`` names the websocket. REST: ``GET /users/@me``,
``GET /gateway/bot``, ``GET /channels/{id}``, ``POST /channels/{id}/messages``
(``enforce_nonce`` honoured; a multipart body with ``payload_json`` and ``files[n]``
parts posts attachments, at most 10 MB, kept in ``attachments``),
``PATCH /channels/{id}/messages/{mid}`` and
``POST /channels/{id}/typing``, ``POST /users/@me/channels`` (the DM channel with a
person: the one their DMs came in, or a new one), all checking ``Authorization: Bot
<token>``. A person in ``closed_dms`` takes no DMs from the server's members: posting
into their DM channel is 403 "Cannot send messages to this user" (50007).

The gateway (``discord_gateway``, shard by shard) sends HELLO, answers IDENTIFY with
READY + GUILD_CREATE, HEARTBEAT with HEARTBEAT_ACK, and RESUME with the missed
dispatches + RESUMED; application commands and interactions are in
``discord_interactions``. Tests script it:
``message()`` dispatches a MESSAGE_CREATE (kept for replay), ``drop()`` cuts the
connection, ``hold()``/``release()`` refuse new connections meanwhile,
``replay_everything`` makes the next RESUME replay already-delivered events too,
``rate_limit()`` answers the next message POSTs with 429 + ``retry_after``, a channel
in ``forbidden`` answers message POSTs with 403 "Missing Access" (50001), one in
``no_send`` (``withhold``: the bot lacks a permission) 403 "Missing Permissions" (50013).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import mimetypes
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import BodyPartReader, web

from tests.fakes.discord_channels import ChannelsServer
from tests.fakes.discord_data import (
    BOT_USER,
    GUILD_ID,
    TOKEN,
    application,
    attachment,
    message,
    snowflake,
    user,
)
from tests.fakes.discord_data import json_response as _json
from tests.fakes.discord_gateway import GatewayServer
from tests.fakes.discord_interactions import InteractionsServer

from .loop_thread import LoopThread


@dataclass
class Call:
    method: str
    path: str
    at: float
    status: int = 200
    body: Any = field(default_factory=dict)


UPLOAD_LIMIT = 10 * 1024 * 1024
"""The most a message's files may weigh in a server without boosts (10 MB)."""


@dataclass
class Attachment:
    """A file the bot attached to a message it posted."""

    channel_id: int
    message_id: int
    filename: str
    data: bytes


@dataclass
class Posted:
    """A message the bot posted, as the channel shows it now (edits applied)."""

    channel_id: int
    id: int
    content: str
    reference: int | None
    history: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    """The message as Discord gives it (with its ``components``)."""


class FakeDiscord(GatewayServer, InteractionsServer, ChannelsServer, LoopThread):
    thread_name = "fake-discord"

    def __init__(self) -> None:
        super().__init__()
        self.token = TOKEN
        self.calls: list[Call] = []
        self.posted: list[Posted] = []
        self.attachments: list[Attachment] = []
        """Files the bot posted (message create with a multipart ``files[n]``)."""
        self._rate_limits: list[float] = []
        self.forbidden: set[int] = set()
        """Channels the bot cannot see: posting there is 403 Missing Access."""
        self.no_send: set[int] = set()
        """Channels where the bot lacks Send Messages: posting is 403 Missing Permissions."""
        self.dm_channels: dict[int, int] = {}
        """Each person's DM channel with the bot, by their id."""
        self.closed_dms: set[int] = set()
        """People who take no DMs from the bot: posting into their DM channel is 403."""
        self._people: dict[int, dict[str, Any]] = {}
        self._nonces: dict[tuple[int, str], dict[str, Any]] = {}
        self._lock = threading.Lock()
        self.history: dict[int, list[dict[str, Any]]] = {}
        """Every message of each channel, oldest first (``GET /channels/{id}/messages``)."""
        self.files: dict[int, bytes] = {}
        self.downloads: list[int] = []
        """Files fetched from the fake CDN, by id."""
        self._init_interactions()
        self._init_gateway()

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v10"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    # ------------------------------------------------------------------ lifecycle

    async def _serve(self) -> None:
        app = web.Application()
        app.router.add_get("/gateway", self._gateway)
        app.router.add_get("/attachments/{id}/{name}", self._download)
        app.router.add_route("*", "/api/v10/{path:.*}", self._rest)
        await self._listen(app)

    def _call(self, coro: Any) -> Any:
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=10)

    # ------------------------------------------------------------------- scripting

    def message(
        self,
        content: str,
        *,
        author: dict[str, Any],
        channel_id: int,
        guild_id: int | None = None,
        mentions_bot: bool = False,
        referenced: dict[str, Any] | None = None,
        attachments: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """A person writes: MESSAGE_CREATE now, or on RESUME when no one is connected.
        ``referenced``'s own ``channel_id`` goes into the ``message_reference``."""
        data = message(
            attachments=attachments,
            message_id=snowflake(),
            channel_id=channel_id,
            author=author,
            content=content,
            guild_id=guild_id,
            mentions=[BOT_USER] if mentions_bot else [],
            referenced=referenced,
        )
        self._remember(channel_id, data)
        with self._lock:
            self._people[int(author["id"])] = author
            if guild_id is None:
                self.dm_channels.setdefault(int(author["id"]), channel_id)
        self._call(self._record_and_send("MESSAGE_CREATE", data))
        return data

    def said_earlier(
        self, content: str, *, author: dict[str, Any], channel_id: int, guild_id: int | None = None
    ) -> dict[str, Any]:
        """A message from before the bot was there: in the channel's history, never dispatched."""
        data = message(
            message_id=snowflake(),
            channel_id=channel_id,
            author=author,
            content=content,
            guild_id=guild_id,
        )
        self._remember(channel_id, data)
        return data

    def _remember(self, channel_id: int, data: dict[str, Any]) -> None:
        with self._lock:
            self.history.setdefault(channel_id, []).append(data)

    def add_file(
        self,
        content: bytes,
        *,
        name: str = "file.png",
        content_type: str = "image/png",
        voice_seconds: float | None = None,
    ) -> dict[str, Any]:
        """A file on the fake CDN, as a message attachment that points at it; with
        ``voice_seconds``, a voice message's (``duration_secs`` and ``waveform``)."""
        file_id = snowflake()
        with self._lock:
            self.files[file_id] = content
        url = f"http://127.0.0.1:{self.port}/attachments/{file_id}/{name}"
        data = attachment(file_id, name, url, content_type=content_type, size=len(content))
        if voice_seconds is not None:
            data |= {"duration_secs": voice_seconds, "waveform": "AAAAAAAAAAAAAAAA"}
        return data

    def rate_limit(self, times: int, *, retry_after: float = 0.2) -> None:
        with self._lock:
            self._rate_limits.extend([retry_after] * times)

    def calls_of(self, method: str, suffix: str, status: int | None = 200) -> list[Call]:
        with self._lock:
            return [
                c
                for c in self.calls
                if c.method == method and c.path.endswith(suffix) and status in (None, c.status)
            ]

    def posted_in(self, channel_id: int) -> list[Posted]:
        with self._lock:
            return [p for p in self.posted if p.channel_id == channel_id]

    async def wait_posted(self, channel_id: int, count: int, timeout: float = 15.0) -> list[Posted]:
        await self.wait_for(lambda: len(self.posted_in(channel_id)) >= count, timeout, "posts")
        return self.posted_in(channel_id)

    # ----------------------------------------------------------------------- REST

    async def _download(self, request: web.Request) -> web.Response:
        file_id = int(request.match_info["id"])
        with self._lock:
            content = self.files.get(file_id)
            self.downloads.append(file_id)
        if content is None:
            return web.Response(status=404)
        return web.Response(body=content, content_type="application/octet-stream")

    async def _rest(self, request: web.Request) -> web.Response:
        path, method = request.match_info["path"], request.method
        body: Any = {}
        uploads: list[tuple[str, bytes]] = []
        if request.content_type.startswith("multipart/"):  # a message with attachments
            body, uploads = await _multipart(request)
        elif request.can_read_body:
            with contextlib.suppress(ValueError):
                body = await request.json()
        call = Call(method, "/" + path, time.monotonic(), body=body)
        with self._lock:
            self.calls.append(call)
        parts = path.split("/")
        if parts[0] in ("interactions", "webhooks"):  # the interaction token is the credential
            answer = self._interaction_rest(method, parts, body)
            if answer is not None:
                call.status = answer.status
                return answer
        if request.headers.get("Authorization") != f"Bot {self.token}":
            call.status = 401
            return _json({"message": "401: Unauthorized", "code": 0}, status=401)
        routed = self._interaction_rest(method, parts, body)
        if routed is not None:
            call.status = routed.status
            return routed
        if path == "users/@me":
            return _json(BOT_USER)
        if path == "users/@me/channels" and method == "POST":
            return self._open_dm(call, body)
        if path == "oauth2/applications/@me":
            return _json(application())
        if path == "gateway/bot":
            limits = {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}
            return _json({"url": self.gateway_url, "shards": 1, "session_start_limit": limits})
        if parts[0] == "channels" and len(parts) == 2 and method == "GET":
            return _json({"id": parts[1], "type": 0, "guild_id": str(GUILD_ID)})
        if parts[0] == "channels" and len(parts) == 3 and method == "GET":
            return self._messages(int(parts[1]), request.query)
        if parts[0] == "channels" and len(parts) == 3 and parts[2] == "typing":
            return web.Response(status=204)
        if parts[0] == "channels" and len(parts) == 3 and method == "POST":
            return self._post_message(call, int(parts[1]), body, uploads)
        if parts[0] == "channels" and len(parts) == 4 and method == "PATCH":
            return self._edit_message(call, int(parts[1]), int(parts[3]), body)
        call.status = 404
        return _json({"message": "404: Not Found", "code": 0}, status=404)

    def _messages(self, channel_id: int, query: Any) -> web.Response:
        """A channel's messages before ``before``, newest first, at most ``limit``."""
        limit = min(int(query.get("limit") or 50), 100)
        before = int(query["before"]) if query.get("before") else None
        with self._lock:
            stored = list(self.history.get(channel_id, []))
        earlier = [m for m in stored if before is None or int(m["id"]) < before]
        return _json(list(reversed(earlier))[:limit])

    def _open_dm(self, call: Call, body: dict[str, Any]) -> web.Response:
        try:
            person = int(body["recipient_id"])
        except (KeyError, TypeError, ValueError):
            call.status = 400
            return _json({"message": "Invalid Form Body", "code": 50035}, status=400)
        with self._lock:
            channel_id = self.dm_channels.setdefault(person, snowflake())
            recipient = self._people.get(person) or user(person, f"user{person}")
        dm = {"id": str(channel_id), "type": 1, "last_message_id": None, "flags": 0}
        return _json({**dm, "recipients": [recipient]})

    def _post_message(
        self,
        call: Call,
        channel_id: int,
        body: dict[str, Any],
        uploads: list[tuple[str, bytes]] | None = None,
    ) -> web.Response:
        if channel_id in self.forbidden:
            call.status = 403
            return _json({"message": "Missing Access", "code": 50001}, status=403)
        if channel_id in self.no_send:
            call.status = 403
            return _json({"message": "Missing Permissions", "code": 50013}, status=403)
        with self._lock:
            closed = any(self.dm_channels.get(p) == channel_id for p in self.closed_dms)
        if closed:
            call.status = 403
            answer = {"message": "Cannot send messages to this user", "code": 50007}
            return _json(answer, status=403)
        with self._lock:
            retry_after = self._rate_limits.pop(0) if self._rate_limits else None
        if retry_after is not None:
            call.status = 429
            answer = {"message": "You are being rate limited.", "retry_after": retry_after}
            headers = {"Via": "1.1 google", "Retry-After": str(retry_after)}
            return _json({**answer, "global": False}, status=429, headers=headers)
        uploads = uploads or []
        if sum(len(data) for _, data in uploads) > UPLOAD_LIMIT:
            call.status = 413
            return _json({"message": "Request entity too large", "code": 40005}, status=413)
        nonce = str(body.get("nonce") or "")
        key = (channel_id, nonce)
        if nonce and body.get("enforce_nonce") and key in self._nonces:
            return _json(self._nonces[key])
        reference = (body.get("message_reference") or {}).get("message_id")
        data = message(
            message_id=snowflake(),
            channel_id=channel_id,
            author=BOT_USER,
            content=str(body.get("content") or ""),
            nonce=nonce or None,
        )
        if body.get("components"):
            data["components"] = body["components"]
        if uploads:
            data["attachments"] = [
                attachment(snowflake(), name, "", content_type=_type_of(name), size=len(blob))
                for name, blob in uploads
            ]
        with self._lock:
            for name, blob in uploads:
                self.attachments.append(Attachment(channel_id, int(data["id"]), name, blob))
            ref = int(reference) if reference else None
            self.posted.append(Posted(channel_id, int(data["id"]), data["content"], ref, data=data))
            self.posted[-1].history.append(data["content"])
            self.history.setdefault(channel_id, []).append(data)
            if nonce:
                self._nonces[key] = data
        return _json(data)

    def _edit_message(
        self, call: Call, channel_id: int, message_id: int, body: dict[str, Any]
    ) -> web.Response:
        with self._lock:
            found = [p for p in self.posted if p.id == message_id]
            if not found:
                call.status = 404
                return _json({"message": "Unknown Message", "code": 10008}, status=404)
            posted = found[0]
            posted.content = str(body.get("content") or "")
            posted.history.append(posted.content)
            if "components" in body:  # given: they replace the message's ones ([]: none)
                if body["components"]:
                    posted.data["components"] = body["components"]
                else:
                    posted.data.pop("components", None)
            posted.data["content"] = posted.content
        data = message(
            message_id=message_id, channel_id=channel_id, author=BOT_USER, content=posted.content
        )
        if posted.data.get("components"):
            data["components"] = posted.data["components"]
        return _json(data)


def _type_of(name: str) -> str:
    """The ``content_type`` Discord gives an attachment: known by its file name."""
    return mimetypes.guess_type(name)[0] or "application/octet-stream"


async def _multipart(request: web.Request) -> tuple[dict[str, Any], list[tuple[str, bytes]]]:
    """A message create with files: the JSON body in ``payload_json``, each file in a
    ``files[n]`` part (its filename given there or in the payload's ``attachments``)."""
    body: dict[str, Any] = {}
    files: list[tuple[str, bytes]] = []
    reader = await request.multipart()
    while (part := await reader.next()) is not None:
        if not isinstance(part, BodyPartReader):
            continue
        if part.name == "payload_json":
            body = json.loads(await part.text())
        elif part.name and part.name.startswith("files["):
            files.append((part.filename or "file", bytes(await part.read())))
    return body, files

"""The gateway websocket of the fake Discord, shard by shard.

A connection says which shard it is in IDENTIFY (``"shard": [id, count]``; none
means ``[0, 1]``). Each shard has its own session, sequence and event log, and
its READY names only its guilds. Events go where Discord sends them: a guild's
to shard ``(guild_id >> 22) % count``, the rest (DMs) to shard 0. An event for
a shard nobody is connected as is kept for that shard's RESUME. Frames are plain
JSON text (discord.py reads text frames as they are).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.discord_data import APP_ID, BOT_USER, GUILD_ID, guild

HEARTBEAT_MS = 1000


@dataclass
class ShardState:
    id: int
    session: str = ""
    seq: int = 0
    events: list[tuple[int, str, Any]] = field(default_factory=list)
    ws: web.WebSocketResponse | None = None
    transport: asyncio.BaseTransport | None = None

    @property
    def open(self) -> bool:
        return self.ws is not None and not self.ws.closed


class GatewayServer:
    """The websocket half of ``FakeDiscord`` (a mixin: it needs ``token``, ``_call``)."""

    token: str

    def _init_gateway(self) -> None:
        self.identifies = 0
        self.resumes = 0
        self.replay_everything = False
        """The next RESUME replays already-delivered events too."""
        self.shard_count = 1
        self.identified: list[tuple[int, int]] = []
        """``[id, count]`` of every IDENTIFY, in order."""
        self.guild_ids: list[int] = [GUILD_ID]
        self.identify_refused = False
        """Every IDENTIFY is closed with 4004 Authentication failed (a token reset after
        the REST login, which Discord checks on the gateway too)."""
        self._shards: dict[int, ShardState] = {}
        self._held = False

    @property
    def gateway_url(self) -> str:
        raise NotImplementedError

    def _call(self, coro: Any) -> Any:
        raise NotImplementedError

    # ------------------------------------------------------------------ scripting

    def shard_of(self, data: Any) -> int:
        guild_id = data.get("guild_id") if isinstance(data, dict) else None
        return 0 if guild_id is None else (int(guild_id) >> 22) % self.shard_count

    def dispatch(self, event: str, data: Any) -> None:
        """Send any gateway event as it is (for fuzzing the client with odd payloads)."""
        self._call(self._record_and_send(event, data))

    def drop(self, shard_id: int | None = None) -> None:
        """Cut a shard's connection (all of them by default) the way a network loss does."""
        self._call(self._drop(shard_id))

    def hold(self) -> None:
        """Refuse new gateway connections until ``release()``."""
        self._held = True

    def release(self) -> None:
        self._held = False

    @property
    def connected(self) -> bool:
        return bool(self.connected_shards())

    def connected_shards(self) -> list[int]:
        return sorted(s.id for s in self._shards.values() if s.open)

    # -------------------------------------------------------------------- gateway

    def _shard(self, shard_id: int) -> ShardState:
        return self._shards.setdefault(shard_id, ShardState(shard_id))

    async def _send(self, ws: web.WebSocketResponse, payload: dict[str, Any]) -> None:
        with contextlib.suppress(ConnectionError, RuntimeError):
            await ws.send_str(json.dumps(payload))

    async def _dispatch(self, shard: ShardState, event: str, data: Any) -> None:
        shard.seq += 1
        if shard.ws is not None:
            await self._send(shard.ws, {"op": 0, "t": event, "s": shard.seq, "d": data})

    async def _record_and_send(self, event: str, data: Any) -> None:
        shard = self._shard(self.shard_of(data))
        shard.seq += 1
        shard.events.append((shard.seq, event, data))
        if shard.open and shard.ws is not None:
            await self._send(shard.ws, {"op": 0, "t": event, "s": shard.seq, "d": data})

    async def _drop(self, shard_id: int | None) -> None:
        for shard in list(self._shards.values()):
            if shard_id is not None and shard.id != shard_id:
                continue
            transport, shard.transport, shard.ws = shard.transport, None, None
            if transport is not None:
                transport.abort()  # type: ignore[attr-defined]

    async def _gateway(self, request: web.Request) -> web.StreamResponse:
        if self._held:
            return web.Response(status=503, text="unavailable")
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        await self._send(ws, {"op": 10, "d": {"heartbeat_interval": HEARTBEAT_MS}})
        mine: ShardState | None = None
        async for frame in ws:
            payload = json.loads(frame.data)
            op, data = payload.get("op"), payload.get("d") or {}
            if op == 1:
                await self._send(ws, {"op": 11})
            elif op == 2:
                if data.get("token") != self.token or self.identify_refused:
                    await ws.close(code=4004, message=b"Authentication failed.")
                    break
                shard_id, count = data.get("shard") or [0, 1]
                if not 0 <= shard_id < count:
                    await ws.close(code=4010, message=b"Invalid shard.")
                    break
                self.shard_count = count
                mine = self._shard(shard_id)
                mine.ws, mine.transport = ws, request.transport
                await self._identify(mine, count)
            elif op == 6:
                found = [s for s in self._shards.values() if s.session == data.get("session_id")]
                if data.get("token") != self.token or not found:
                    await self._send(ws, {"op": 9, "d": False})
                    continue
                mine = found[0]
                mine.ws, mine.transport = ws, request.transport
                await self._resume(mine, int(data.get("seq") or 0))
        if mine is not None and mine.ws is ws:
            mine.ws = mine.transport = None
        return ws

    async def _identify(self, shard: ShardState, count: int) -> None:
        self.identifies += 1
        self.identified.append((shard.id, count))
        shard.session = uuid.uuid4().hex
        shard.events.clear()
        shard.seq = 0
        guilds = [g for g in self.guild_ids if (g >> 22) % count == shard.id]
        ready = {
            "v": 10,
            "user": BOT_USER,
            "guilds": [{"id": str(g), "unavailable": True} for g in guilds],
            "session_id": shard.session,
            "resume_gateway_url": self.gateway_url,
            "application": {"id": str(APP_ID), "flags": 0},
            "shard": [shard.id, count],
        }
        await self._dispatch(shard, "READY", ready)
        for guild_id in guilds:
            await self._dispatch(shard, "GUILD_CREATE", guild(guild_id))

    async def _resume(self, shard: ShardState, seq: int) -> None:
        self.resumes += 1
        assert shard.ws is not None
        for number, event, data in list(shard.events):
            if number > seq or self.replay_everything:
                await self._send(shard.ws, {"op": 0, "t": event, "s": number, "d": data})
        self.replay_everything = False
        await self._dispatch(shard, "RESUMED", {})

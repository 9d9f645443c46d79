"""Slack's Socket Mode, as the fake Slack serves it.

``apps.connections.open`` (with the app-level token) hands out a one-time
``ws://…/socket?ticket=…`` URL; a client that connects there gets ``hello``,
then the envelopes a test sends (``events_api``, ``slash_commands``), and each
envelope is done when the client sends ``{"envelope_id": …}`` back (the ack,
with its optional ``payload``). ``drop()`` ends every connection the way Slack
does before it moves an app to another server: a ``disconnect`` message, then a
close. What the fake saw is kept: connections opened, envelopes sent, acks.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from .slack_requests import APP_ID, action_payload, command_payload, event_callback

APP_TOKEN = "xapp-1-AAPP0001-fake-app-level-token"


@dataclass
class Envelope:
    envelope_id: str
    type: str
    payload: dict[str, Any]
    acked: bool = False
    ack_payload: dict[str, Any] | None = None


@dataclass
class SocketState:
    tickets: set[str] = field(default_factory=set)
    sockets: list[web.WebSocketResponse] = field(default_factory=list)
    hellos: int = 0
    envelopes: dict[str, Envelope] = field(default_factory=dict)
    refuse: bool = False
    """Whether ``apps.connections.open`` answers invalid_auth."""


class SocketModeServer:
    """The Socket Mode half of ``FakeSlack`` (a mixin: it needs ``port`` and ``_call``)."""

    port: int
    app_token: str
    _lock: threading.Lock

    def _init_socket(self) -> None:
        self.app_token = APP_TOKEN
        self.socket = SocketState()
        self._tickets = itertools.count(1)

    def _socket_routes(self, app: web.Application) -> None:
        app.router.add_get("/socket", self._socket)

    def _m_apps_connections_open(self, params: dict[str, Any]) -> dict[str, Any]:
        ticket = f"t{next(self._tickets)}-{uuid.uuid4().hex[:8]}"
        with self._lock:
            self.socket.tickets.add(ticket)
        return {"url": f"ws://127.0.0.1:{self.port}/socket?ticket={ticket}"}

    async def _socket(self, request: web.Request) -> web.StreamResponse:
        ticket = request.query.get("ticket", "")
        with self._lock:
            valid = ticket in self.socket.tickets
            self.socket.tickets.discard(ticket)
        if not valid:
            return web.Response(status=401, text="invalid ticket")
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        with self._lock:
            self.socket.sockets.append(ws)
            self.socket.hellos += 1
        hello = {
            "type": "hello",
            "num_connections": len(self.socket.sockets),
            "debug_info": {"host": "fake-slack", "approximate_connection_time": 3600},
            "connection_info": {"app_id": APP_ID},
        }
        await ws.send_str(json.dumps(hello))
        try:
            async for message in ws:
                if message.type != WSMsgType.TEXT:
                    continue
                self._acked(json.loads(message.data))
        finally:
            with self._lock:
                if ws in self.socket.sockets:
                    self.socket.sockets.remove(ws)
        return ws

    def _acked(self, data: Any) -> None:
        if not isinstance(data, dict):
            return
        with self._lock:
            envelope = self.socket.envelopes.get(str(data.get("envelope_id")))
            if envelope is not None:
                envelope.acked = True
                envelope.ack_payload = data.get("payload")

    # ------------------------------------------------------------------ scripting

    def send_envelope(
        self, kind: str, payload: dict[str, Any], *, retry_attempt: int = 0
    ) -> Envelope:
        """Send one envelope on the newest connection; returns it (``acked`` once answered)."""
        envelope = Envelope(str(uuid.uuid4()), kind, payload)
        message = {
            "envelope_id": envelope.envelope_id,
            "type": kind,
            "payload": payload,
            "accepts_response_payload": kind != "events_api",
            "retry_attempt": retry_attempt,
            "retry_reason": "timeout" if retry_attempt else "",
        }
        with self._lock:
            self.socket.envelopes[envelope.envelope_id] = envelope
        self._call(self._send_newest(json.dumps(message)))
        return envelope

    def socket_event(self, event: dict[str, Any], *, event_id: str | None = None) -> Envelope:
        return self.send_envelope("events_api", event_callback(event, event_id=event_id))

    def socket_command(self, text: str, *, user: str, channel: str, **extra: str) -> Envelope:
        response_url = self.response_url()
        payload = command_payload(text, user=user, channel=channel, response_url=response_url)
        return self.send_envelope("slash_commands", {**payload, **extra})

    def socket_action(
        self, action_id: str, value: str, *, user: str, channel: str, block_id: str | None = None
    ) -> Envelope:
        """A button click as Socket Mode delivers it (an ``interactive`` envelope)."""
        response_url = self.response_url()
        payload = action_payload(
            action_id,
            value,
            user=user,
            channel=channel,
            response_url=response_url,
            block_id=block_id,
        )
        return self.send_envelope("interactive", payload)

    def send_raw(self, text: str) -> None:
        """Send ``text`` as it is on the newest connection (for malformed envelopes)."""
        self._call(self._send_newest(text))

    def drop(self) -> None:
        """Slack's ``disconnect`` on every connection, then a close."""
        self._call(self._drop())

    def socket_connected(self) -> bool:
        with self._lock:
            return any(not ws.closed for ws in self.socket.sockets)

    async def wait_acked(self, envelope: Envelope, timeout: float = 15.0) -> Envelope:
        deadline = asyncio.get_running_loop().time() + timeout
        while not envelope.acked:
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"envelope {envelope.type} was not acknowledged")
            await asyncio.sleep(0.02)
        return envelope

    # ------------------------------------------------------------ on the fake's loop

    async def _send_newest(self, text: str) -> None:
        with self._lock:
            live = [ws for ws in self.socket.sockets if not ws.closed]
        if not live:
            raise AssertionError("no Socket Mode connection is open")
        await live[-1].send_str(text)

    async def _drop(self) -> None:
        with self._lock:
            sockets = list(self.socket.sockets)
        for ws in sockets:
            if not ws.closed:
                await ws.send_str(json.dumps({"type": "disconnect", "reason": "refresh_requested"}))
                await ws.close()

    # --------------------------------------------------------------- needed from FakeSlack

    def response_url(self) -> str:
        raise NotImplementedError

    def _call(self, coro: Any) -> Any:
        raise NotImplementedError

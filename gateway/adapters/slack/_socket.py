"""Socket Mode: Slack's events and slash commands over a websocket the gateway opens.

slack-bolt's ``AsyncSocketModeHandler`` runs the connection (pings, reconnects
when Slack asks to or the socket drops) and hands each envelope to the same
bolt app the HTTP mode uses; the envelope is acknowledged when bolt's listener
acks, after the adapter's middleware has recorded the delivery. This module
adds what an operator needs around it:

- the app-level token is tried once before the SDK's own connect loop, so a
  wrong ``SLACK_APP_TOKEN`` is one clear error line instead of a traceback a
  few seconds forever, and other failures back off;
- ``is_connected()`` reads the live socket for ``/readyz``; a lost connection
  and its return are logged once each, the SDK's own line for every failed
  reconnect at most once a minute;
- an envelope of a shape bolt would fail on is acknowledged and counted, never
  retried into a loop; the one-time ``ticket`` of the websocket URL is masked in
  the SDK's log lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from typing import Any

from aiohttp import ClientError
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from gateway.adapters._support import Backoff
from gateway.adapters.slack._client import BAD_TOKEN_ERRORS, error_code
from gateway.adapters.slack._events import well_formed_payload
from gateway.clock import Clock

logger = logging.getLogger(__name__)

MAX_BACKOFF = 60.0
_TICKET = re.compile(r"ticket=[^&\s'\"]+")


class _Quieter(logging.Filter):
    """The SDK logs every failed reconnect (with a traceback); one line a minute of each is
    enough for an operator, and the watcher says when the connection is back."""

    def __init__(self, interval: float = 60.0) -> None:
        super().__init__()
        self._interval = interval
        self._last: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        if _rejected_token(record):
            return False  # the gateway logs its own line for a rejected token
        key = str(record.msg)[:40]
        now = time.monotonic()
        if now - self._last.get(key, -self._interval) < self._interval:
            return False
        self._last[key] = now
        if len(self._last) > 100:
            self._last.clear()
        return True


def _rejected_token(record: logging.LogRecord) -> bool:
    """The SDK's line for an ``apps.connections.open`` refused for the token itself."""
    try:
        message = record.getMessage()
    except Exception:
        return False
    return message.startswith("Failed to retrieve WSS URL") and any(
        f"'{code}'" in message for code in BAD_TOKEN_ERRORS
    )


class _MaskTicket(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            return True
        if "ticket=" in message:
            record.msg, record.args = _TICKET.sub("ticket=***", message), ()
        return True


WEB_CLIENT_LOGGER = "slack_sdk.web.async_base_client"
"""Where slack_sdk logs Web API answers at DEBUG (``apps.connections.open``'s URL too)."""


def sdk_logger() -> logging.Logger:
    """The logger the Socket Mode client writes to, with websocket tickets masked."""
    sdk = logging.getLogger(f"{__name__}.sdk")
    if not any(isinstance(f, _Quieter) for f in sdk.filters):
        sdk.addFilter(_Quieter())
    for logger_ in (sdk, logging.getLogger(WEB_CLIENT_LOGGER)):
        if not any(isinstance(f, _MaskTicket) for f in logger_.filters):
            logger_.addFilter(_MaskTicket())
    return sdk


class _Handler(AsyncSocketModeHandler):
    """Bolt's handler, refusing envelopes of a shape bolt cannot take."""

    def __init__(self, app: AsyncApp, app_token: str, web_client: AsyncWebClient, **kw: Any):
        super().__init__(app, app_token, logger=sdk_logger(), web_client=web_client, **kw)
        self.unreadable = 0

    async def handle(self, client: SocketModeClient, req: SocketModeRequest) -> None:  # type: ignore[override]
        if not isinstance(req.payload, dict) or not well_formed_payload(req.payload):
            self.unreadable += 1
            logger.warning("slack: a Socket Mode envelope of an unexpected shape was dropped")
            await client.send_socket_mode_response(SocketModeResponse(req.envelope_id))
            return
        await super().handle(client, req)


class SocketConnection:
    def __init__(
        self,
        app: AsyncApp,
        *,
        app_token: str,
        web_client: AsyncWebClient,
        ping_interval: float,
        clock: Clock,
        first_backoff: float,
    ) -> None:
        self._app = app
        self._app_token = app_token
        self._web_client = web_client
        self._ping_interval = ping_interval
        self._clock = clock
        self._first_backoff = first_backoff
        self._handler: _Handler | None = None
        self._watcher: asyncio.Task[None] | None = None
        self.rejected: str | None = None
        """Slack refused the app-level token (its error code): no retry until the
        configuration changes."""

    @property
    def unreadable(self) -> int:
        return self._handler.unreadable if self._handler is not None else 0

    async def open(self) -> bool:
        """Connect (backing off on errors); False when Slack rejects the app-level token."""
        backoff = Backoff(first=self._first_backoff, cap=MAX_BACKOFF, sleep=self._clock.sleep)
        handler = _Handler(
            self._app, self._app_token, self._web_client, ping_interval=self._ping_interval
        )
        self._handler = handler
        client = handler.client
        while True:
            try:
                url = await client.issue_new_wss_url()
            except SlackApiError as exc:
                code = error_code(exc)
                if code in BAD_TOKEN_ERRORS:  # the gateway reports it (``SlackAdapter.failure``)
                    self.rejected = code
                    return False
                logger.warning(
                    "slack: apps.connections.open failed (%s); retrying in %.1fs",
                    code,
                    backoff.delay,
                )
            except (ClientError, TimeoutError, OSError) as exc:
                logger.warning(
                    "slack: apps.connections.open failed (%s); retrying in %.1fs",
                    type(exc).__name__,
                    backoff.delay,
                )
            else:
                client.wss_uri = url
                await client.connect()  # type: ignore[no-untyped-call]
                self._watcher = asyncio.create_task(self._watch(), name="slack-socket-watch")
                return True
            await backoff.wait()

    def is_connected(self) -> bool:
        handler = self._handler
        if handler is None:
            return False
        client = handler.client
        session = client.current_session
        return not (client.closed or client.stale or session is None or session.closed)

    async def close(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
            self._watcher = None
        handler, self._handler = self._handler, None
        if handler is not None:
            await handler.close_async()  # type: ignore[no-untyped-call]

    async def _watch(self) -> None:
        """Log each change of the connection once (the SDK reconnects on its own)."""
        up = True
        while True:
            await self._clock.sleep(self._ping_interval)
            now = self.is_connected()
            if now == up:
                continue
            up = now
            if up:
                logger.info("slack: Socket Mode connected again")
            else:
                logger.warning("slack: the Socket Mode connection was lost; reconnecting")

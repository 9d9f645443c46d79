"""Slack, through one slack-bolt ``AsyncApp``, over Socket Mode or the Events API over HTTP.

With ``slack.app_token`` set the adapter opens a Socket Mode websocket
(``_socket``): no public URL, no signing secret. Otherwise Slack posts events to
``slack.events_path`` and slash commands to ``slack.commands_path`` on the
gateway's HTTP server; each request's v0 signature is checked on its raw bytes
before anything reads them (401 when it is missing or wrong, one log line a
minute at most) and bolt answers ``url_verification``. Until ``auth.test`` has told the
adapter who the bot is, HTTP requests get 503 and the socket is not opened.

Either way a bolt middleware records each event in the durable inbox before it is
acknowledged (``_recording``); ``_inbound`` turns events into messages, ``_surfaces``
takes the others (the Home tab, assistant threads).

``/chorus …`` (``slack.slash_command``) is acked at once and answered through
the command's ``response_url``, ephemeral: only the caller sees it.

Outbound (``_outbound``): ``chat.postMessage`` in the message's thread and ``chat.update`` for
streamed edits (429s waited out and retried; a failure leaves as an ``AdapterError``,
``_errors``). Tokens, signing secret, text above DEBUG: never logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_bolt.response import BoltResponse

from gateway.adapters._base import AdapterCapabilities
from gateway.adapters._intake import RouteHandler
from gateway.adapters._support import Backoff
from gateway.adapters.slack._actions import (
    CHOICE_ACTION,
    REVIEW_ACTION,
    answer_action,
)
from gateway.adapters.slack._bolt_log import bolt_logger
from gateway.adapters.slack._busy import BusyIndicator
from gateway.adapters.slack._client import (
    api_url,
    app_token_of,
    authorization,
    build_client,
    identify,
    signing_secret_of,
    token_of,
    usable,
)
from gateway.adapters.slack._commands import answer_slash, typed_command
from gateway.adapters.slack._events import BotIdentity, well_formed
from gateway.adapters.slack._files import FileFetcher
from gateway.adapters.slack._home import AppHome
from gateway.adapters.slack._inbound import THREAD_CONTEXT_MESSAGES, SlackInbound
from gateway.adapters.slack._modes import both_configured, both_notice, not_over_http
from gateway.adapters.slack._names import UserNames
from gateway.adapters.slack._outbound import SlackOutbound
from gateway.adapters.slack._recording import record_first
from gateway.adapters.slack._review_cards import ReviewCards
from gateway.adapters.slack._settings import SlackSettings
from gateway.adapters.slack._signing import RequestSigning
from gateway.adapters.slack._socket import SocketConnection
from gateway.adapters.slack._surfaces import listen_to_surfaces
from gateway.clock import Clock, SystemClock
from gateway.errors import ConfigError
from gateway.events import InboundMessage

logger = logging.getLogger(__name__)

START_WAIT = 10.0
"""Seconds ``start()`` waits to be connected before it lets the gateway go on without it."""
START_BACKOFF = 1.0
MAX_BACKOFF = 60.0
COMMANDS_AT_STOP = 5.0
"""Seconds ``stop()`` gives slash commands still being answered."""


class SlackAdapter(SlackOutbound):
    name = "slack"
    prompt_hint = "You are talking on Slack. Use Slack mrkdwn sparingly; keep answers compact."
    capabilities = AdapterCapabilities(
        max_text_length=3500,
        edits=True,
        typing=False,
        min_edit_interval=1.0,
        max_file_size=1024 * 1024 * 1024,  # Slack's limit for one uploaded file
        voice=True,
    )

    def __init__(
        self,
        settings: SlackSettings,
        *,
        vision: bool = False,
        bot_user_id: str | None = None,
        start_backoff: float = START_BACKOFF,
        start_wait: float = START_WAIT,
        context_messages: int = THREAD_CONTEXT_MESSAGES,
        clock: Clock | None = None,
    ) -> None:
        """``bot_user_id`` given: the adapter trusts it and skips ``auth.test``."""
        super().__init__()
        try:
            usable(settings)
            self._token = token_of(settings)
            secret = signing_secret_of(settings)
            app_token = app_token_of(settings) if settings.socket_mode else ""
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        self._settings = settings
        self._client = build_client(settings)
        self._start_backoff = start_backoff
        self._start_wait = start_wait
        self._clock = clock or SystemClock()
        self._command_names: list[str] = []
        self._answering: set[asyncio.Task[None]] = set()
        self._cards = ReviewCards()
        self._busy = BusyIndicator(self._client)

        # Bolt authorizes each request from the identity found at start-up (no
        # auth.test of its own on the request path), so its client has no token.
        # It passes arguments by parameter name: it gets plain functions, not methods.
        async def authorize(enterprise_id: str | None, team_id: str | None) -> AuthorizeResult:
            return authorization(self._inbound.me, self._token, enterprise_id, team_id)

        async def recording(
            body: dict[str, Any], next: Callable[[], Awaitable[None]]
        ) -> BoltResponse | None:
            return await record_first(self, body, next, paused=self._paused)

        async def on_event(body: dict[str, Any], event: dict[str, Any]) -> None:
            try:
                await self._inbound.take(body, event)
            except Exception:
                logger.exception("a slack event could not be handled")

        async def on_command(
            ack: Callable[[], Awaitable[None]], body: dict[str, Any], respond: AsyncRespond
        ) -> None:
            await ack()
            self._spawn(self._answer_slash(body, respond), "slash command")

        async def on_action(
            ack: Callable[[], Awaitable[None]], body: dict[str, Any], respond: AsyncRespond
        ) -> None:
            await ack()
            work = answer_action(
                body, respond, answer=self.answer_command, names=self._names, cards=self._cards
            )
            self._spawn(work, "button click")

        self._signing = RequestSigning(secret, self._clock)
        self._app = AsyncApp(
            client=build_client(settings, with_token=False),
            signing_secret=secret,
            request_verification_enabled=not settings.socket_mode,
            authorize=authorize,
            logger=bolt_logger(),
        )
        self._app.middleware(recording)
        self._app.event("message")(on_event)
        self._app.event("app_mention")(on_event)
        self._app.command(settings.slash_command)(on_command)
        self._app.action(REVIEW_ACTION)(on_action)
        self._app.action(CHOICE_ACTION)(on_action)
        home = AppHome(
            self._client, answer=self.answer_command, spell=self._spelled, clock=self._clock
        )
        listen_to_surfaces(self._app, self, home=home, busy=self._busy)
        self._socket = (
            SocketConnection(
                self._app,
                app_token=app_token,
                web_client=self._client,
                ping_interval=settings.socket_ping_interval,
                clock=self._clock,
                first_backoff=start_backoff,
            )
            if settings.socket_mode
            else None
        )
        self._names = UserNames(self._client, clock=self._clock)
        host = urlsplit(api_url(settings)).hostname if settings.api_url else None
        self._inbound = SlackInbound(
            self,
            self._client,
            names=self._names,
            fetcher=FileFetcher(self._token, extra_host=host),
            vision=vision,
            context_messages=context_messages,
            clock=self._clock,
        )
        self._inbound.me = BotIdentity(bot_user_id) if bot_user_id else None
        self._connector: asyncio.Task[None] | None = None
        self._failure: str | None = None
        self._started = False
        self._paused = False

    # ------------------------------------------------------------------ lifecycle

    async def connect(self) -> None:
        if self._started:
            return
        self._started = True
        self._connector = asyncio.create_task(self._connect(), name="slack-connect")
        await asyncio.wait({self._connector}, timeout=self._start_wait)
        if not self.is_connected() and self.failure() is None:
            logger.warning("slack: not connected yet; %s", self._waiting_means())

    def _waiting_means(self) -> str:
        if self._socket is not None:
            return "Socket Mode opens once auth.test works"
        return "events get 503 until auth.test works"

    async def _connect(self) -> None:
        """``auth.test`` until it works (gives up only on a bad token), then the socket."""
        if self._inbound.me is None and not await self._who_am_i():
            return
        me = self._inbound.me
        assert me is not None
        if self._socket is None:
            logger.info("slack ready as %s (events on %s)", me.user_id, self.events_path)
            return
        if both_configured(self._settings):
            logger.warning(both_notice(self._settings))
        if await self._socket.open():
            logger.info("slack ready as %s over Socket Mode", me.user_id)

    async def _who_am_i(self) -> bool:
        backoff = Backoff(first=self._start_backoff, cap=MAX_BACKOFF, sleep=self._clock.sleep)
        found = await identify(self._client, backoff)
        if isinstance(found, str):  # the gateway reports it (``failure``)
            self._failure = found
            return False
        self._inbound.me = found
        return True

    async def pause(self) -> None:
        """Refuse new events from now on (Slack sends them again later)."""
        self._paused = True

    async def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        if self._connector is not None and not self._connector.done():
            self._connector.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._connector
        self._connector = None
        if self._answering:
            await asyncio.wait(set(self._answering), timeout=COMMANDS_AT_STOP)
            for task in self._answering:
                task.cancel()
        await self._busy.close(COMMANDS_AT_STOP)
        if self._socket is not None:
            with contextlib.suppress(Exception):
                await self._socket.close()
        logger.info("slack stopped")

    def mode(self) -> str:
        return "Socket Mode" if self._socket is not None else f"HTTP events on {self.events_path}"

    def failure(self) -> str | None:
        if self._failure is None and self._socket is not None and self._socket.rejected:
            code = self._socket.rejected
            return f"Slack rejected the app-level token ({code}); check SLACK_APP_TOKEN"
        return self._failure

    def is_connected(self) -> bool:
        if not self._started or self._inbound.me is None:
            return False
        return self._socket is None or self._socket.is_connected()

    @property
    def bot(self) -> BotIdentity | None:
        return self._inbound.me

    @property
    def socket_mode(self) -> bool:
        return self._socket is not None

    @property
    def events_path(self) -> str:
        return self._settings.events_path

    @property
    def commands_path(self) -> str:
        return self._settings.commands_path

    # -------------------------------------------------------------------- inbound

    def http_routes(self) -> list[tuple[str, str, RouteHandler]]:
        """The events and commands paths; in Socket Mode none, or 404 with a hint when a
        signing secret is set too (``_modes``)."""
        paths = dict.fromkeys((self.events_path, self.commands_path))
        if self._socket is not None:
            both = both_configured(self._settings)
            return [("POST", path, not_over_http) for path in paths] if both else []
        return [("POST", path, self._request) for path in paths]

    async def _request(self, request: web.Request) -> web.StreamResponse:
        """One request from Slack over HTTP: an event, a slash command or interactivity."""
        if not self.is_connected():
            return web.json_response({"error": "not ready"}, status=503)
        body = await request.read()
        timestamp = request.headers.get("X-Slack-Request-Timestamp", "")
        signature = request.headers.get("X-Slack-Signature", "")
        if not self._signing.signed(body, timestamp, signature):
            self.counters["unsigned_requests"] += 1
            return web.json_response({"error": "invalid request"}, status=401)
        if not well_formed(body):
            # signed, but of a shape bolt's own checks would fail on (answering 500 forever)
            self.counters["unreadable_requests"] += 1
            logger.warning("slack: a signed request of an unexpected shape was refused")
            return web.json_response({"error": "bad request"}, status=400)
        response = await self._app.async_dispatch(await to_bolt_request(request))
        return await to_aiohttp_response(response)

    async def read_again(self, payload: str) -> InboundMessage | None:
        """A recorded event, read as if it had just arrived (for a restart)."""
        message = await self._inbound.read_again(payload)
        return self._as_command(message) if message is not None else None

    async def deliver(self, message: InboundMessage) -> None:
        await super().deliver(self._as_command(message))

    def _as_command(self, message: InboundMessage) -> InboundMessage:
        """``@chorus /chorus new`` or ``@chorus new``: the command of the message's thread."""
        if not (message.is_direct or message.mentions_bot or message.reply_to_bot):
            return message
        slash = self._settings.slash_command
        names = self._command_names
        command = typed_command(message.text, slash, names, mentioned=message.mentions_bot)
        return replace(message, text=command) if command is not None else message

    # ------------------------------------------------------------- slash commands

    def _spawn(self, work: Coroutine[Any, Any, None], what: str) -> None:
        """Answer a command or a click after its ack, in a task ``stop()`` waits for."""

        async def guarded() -> None:
            try:
                await work
            except Exception:
                logger.exception("a slack %s could not be answered", what)

        task = asyncio.create_task(guarded(), name=f"slack-{what}")
        self._answering.add(task)
        task.add_done_callback(self._answering.discard)

    async def _answer_slash(self, body: dict[str, Any], respond: AsyncRespond) -> None:
        await answer_slash(
            body,
            respond,
            answer=self.answer_command,
            names=self._names,
            command_names=self._command_names,
            slash_command=self._settings.slash_command,
            limit=self.capabilities.max_text_length,
            cards=self._cards,
        )

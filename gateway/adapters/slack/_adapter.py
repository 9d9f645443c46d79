"""Slack, through slack-bolt's ``AsyncApp`` and the Events API over HTTP.

Slack posts events to ``slack.events_path`` (default ``/slack/events``) on the
gateway's HTTP server. Bolt checks each request's signature (401 when it is
wrong), answers ``url_verification``, and acks the event at once; the listener
then does the work after the response has gone out. Until ``auth.test`` has
told the adapter who the bot is, events are answered 503 so Slack sends them
again later.

Retried deliveries (``X-Slack-Retry-Num``) of an event the adapter already took
are dropped by ``event_id``; a ``message`` and an ``app_mention`` of the same
message become one message. The first message the adapter sees in an existing
thread carries the thread's earlier messages as quoted context
(``conversations.replies``), so a session that starts cold knows what was said.

Outbound: ``chat.postMessage`` in the message's thread and ``chat.update`` for
streamed edits, through ``slack_client`` (429s waited out and retried). The
token and the signing secret are never logged, nor message text above DEBUG.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import replace
from typing import Any

from aiohttp import ClientError, web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.errors import SlackApiError
from slack_sdk.signature import SignatureVerifier

from gateway.adapters._base import AdapterCapabilities, BaseAdapter, RouteHandler
from gateway.adapters._support import Backoff, ChatLanes, SeenSet
from gateway.adapters.slack._client import (
    BAD_TOKEN_ERRORS,
    build_client,
    error_code,
    signing_secret_of,
    token_of,
    who_am_i,
)
from gateway.adapters.slack._events import (
    BotIdentity,
    event_id_of,
    inbound_from,
    thread_context,
    well_formed,
)
from gateway.adapters.slack._format import to_mrkdwn
from gateway.adapters.slack._settings import SlackSettings
from gateway.clock import Clock, SystemClock
from gateway.errors import ConfigError
from gateway.events import InboundMessage, OutboundMessage, SentMessage
from gateway.logs import WithholdText

logger = logging.getLogger(__name__)

START_WAIT = 10.0
"""Seconds ``start()`` waits for ``auth.test`` before it lets the gateway go on without it."""
START_BACKOFF = 1.0
MAX_BACKOFF = 60.0
THREAD_CONTEXT_MESSAGES = 20
"""Earlier messages of a thread quoted to a session that starts cold in it."""
REPLIES_PAGE = 200
REPLIES_PAGES = 3
"""Pages of ``conversations.replies`` read at most for one thread's context."""
REMEMBERED = 10_000
"""Event ids, message ids and threads remembered (each, most recent first)."""


def _bolt_logger() -> logging.Logger:
    """slack-bolt's logger; its lines that would print a request body keep only their start."""
    bolt = logging.getLogger(f"{__name__}.bolt")
    if not any(isinstance(f, WithholdText) for f in bolt.filters):
        bolt.addFilter(
            WithholdText(
                "Invalid request signature detected",
                "A global middleware (",
            )
        )
    return bolt


class SlackAdapter(BaseAdapter):
    name = "slack"
    prompt_hint = "You are talking on Slack. Use Slack mrkdwn sparingly; keep answers compact."
    capabilities = AdapterCapabilities(
        max_text_length=3500,
        edits=True,
        typing=False,
        min_edit_interval=1.0,
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
            self._token = token_of(settings)
            secret = signing_secret_of(settings)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        self._settings = settings
        self._vision = vision
        self._client = build_client(settings)
        self._start_backoff = start_backoff
        self._start_wait = start_wait
        self._context_messages = context_messages
        self._clock = clock or SystemClock()

        # Bolt authorizes each request from the identity found at start-up (no
        # auth.test of its own on the request path), so its client has no token.
        # It passes arguments by parameter name: it gets plain functions, not methods.
        async def authorize(enterprise_id: str | None, team_id: str | None) -> AuthorizeResult:
            return self._authorize(enterprise_id, team_id)

        async def on_event(body: dict[str, Any], event: dict[str, Any]) -> None:
            await self._on_event(body, event)

        self._verifier = SignatureVerifier(secret)
        self._app = AsyncApp(
            client=build_client(settings, with_token=False),
            signing_secret=secret,
            authorize=authorize,
            logger=_bolt_logger(),
        )
        self._app.event("message")(on_event)
        self._app.event("app_mention")(on_event)
        self._me = BotIdentity(bot_user_id) if bot_user_id else None
        self._event_ids = SeenSet(REMEMBERED)
        self._message_ids = SeenSet(REMEMBERED)
        self._threads = SeenSet(REMEMBERED)
        self._lanes = ChatLanes("slack")
        self._connector: asyncio.Task[None] | None = None
        self._started = False
        self._paused = False

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        if self._me is not None:
            logger.info("slack ready as %s (events on %s)", self._me.user_id, self.events_path)
            return
        self._connector = asyncio.create_task(self._connect(), name="slack-auth-test")
        await asyncio.wait({self._connector}, timeout=self._start_wait)
        if self._me is None:
            logger.warning("slack: not connected yet; events get 503 until auth.test works")

    async def _connect(self) -> None:
        """``auth.test`` until it works; backs off on errors, gives up only on a bad token."""
        backoff = Backoff(first=self._start_backoff, cap=MAX_BACKOFF, sleep=self._clock.sleep)
        while self._me is None:
            try:
                me = await who_am_i(self._client)
            except SlackApiError as exc:
                code = error_code(exc)
                if code in BAD_TOKEN_ERRORS:
                    logger.error("Slack rejected the bot token (%s); check SLACK_BOT_TOKEN", code)
                    return
                logger.warning(
                    "slack: auth.test failed (%s); retrying in %.1fs", code, backoff.delay
                )
            except (ClientError, TimeoutError, OSError) as exc:
                name = type(exc).__name__
                logger.warning(
                    "slack: auth.test failed (%s); retrying in %.1fs", name, backoff.delay
                )
            else:
                self._me = me
                logger.info("slack connected as @%s (%s)", me.name, me.user_id)
                return
            await backoff.wait()

    async def pause(self) -> None:
        """Answer new events 503 from now on: Slack sends them again later."""
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
        logger.info("slack stopped")

    def is_connected(self) -> bool:
        return self._started and self._me is not None

    @property
    def bot(self) -> BotIdentity | None:
        return self._me

    @property
    def events_path(self) -> str:
        return self._settings.events_path

    # -------------------------------------------------------------------- inbound

    def http_routes(self) -> list[tuple[str, str, RouteHandler]]:
        return [("POST", self.events_path, self._events)]

    async def _events(self, request: web.Request) -> web.StreamResponse:
        if not self.is_connected() or self._paused:
            return web.json_response({"error": "not ready"}, status=503)
        timestamp = request.headers.get("X-Slack-Request-Timestamp", "")
        if not (timestamp.isascii() and timestamp.isdigit()):
            # bolt would fail on int() of it and answer 500; it is simply not signed right
            logger.warning("slack: refused a request without a valid signature timestamp")
            return web.json_response({"error": "invalid request"}, status=401)
        body = await request.read()
        signature = request.headers.get("X-Slack-Signature", "")
        signed = self._verifier.is_valid(body, timestamp, signature)
        if signed and not well_formed(body):
            # signed, but of a shape bolt's own checks would fail on (answering 500 forever)
            self.counters["unreadable_requests"] += 1
            logger.warning("slack: a signed request of an unexpected shape was refused")
            return web.json_response({"error": "bad request"}, status=400)
        event_id = event_id_of(body) if signed else ""
        if event_id and not await self.record(event_id, body.decode("utf-8", "replace")):
            logger.debug("slack: event %s is known; acknowledged, not handled again", event_id)
            return web.json_response({})
        response = await self._app.async_dispatch(await to_bolt_request(request))
        return await to_aiohttp_response(response)

    def _authorize(self, enterprise_id: str | None, team_id: str | None) -> AuthorizeResult:
        me = self._me
        if me is None:
            raise RuntimeError("slack adapter is not connected yet")
        return AuthorizeResult(
            enterprise_id=enterprise_id,
            team_id=team_id or me.team_id,
            bot_user_id=me.user_id,
            bot_id=me.bot_id or None,
            bot_token=self._token,
        )

    async def _on_event(self, body: dict[str, Any], event: dict[str, Any]) -> None:
        try:
            await self._take(body, event)
        except Exception:
            logger.exception("a slack event could not be handled")

    async def _take(self, body: dict[str, Any], event: dict[str, Any]) -> None:
        me = self._me
        if me is None:
            return
        event_id = str(body.get("event_id") or "")
        receipts = (event_id,) if event_id else ()
        if event_id and not self._event_ids.add(event_id):
            logger.debug("slack: dropped a repeated delivery of event %s", event_id)
            return
        message = inbound_from(event, me)
        if message is None or not self._message_ids.add((message.chat_id, message.message_id)):
            await self.settled(receipts)  # not for us, or the other event of the same message
            return
        logger.debug("slack message %s in %s", message.message_id, message.chat_id)
        message = replace(message, receipts=receipts)

        async def hand_over() -> None:
            await self.deliver(await self._with_thread_context(message, me))

        self._lanes.submit(message.chat_id, hand_over)

    async def read_again(self, payload: str) -> InboundMessage | None:
        """A recorded event, read as if it had just arrived (for a restart)."""
        me = self._me
        if me is None:
            raise RuntimeError("slack is not connected yet")
        event = json.loads(payload).get("event")
        message = inbound_from(event, me) if isinstance(event, dict) else None
        if message is None:
            return None
        self._message_ids.add((message.chat_id, message.message_id))
        return await self._with_thread_context(message, me)

    async def _with_thread_context(
        self, message: InboundMessage, me: BotIdentity
    ) -> InboundMessage:
        """``message`` with its thread's earlier messages when it is the first one seen there."""
        thread = message.thread_id
        if thread is None or not (message.is_direct or message.mentions_bot):
            return message
        if not self._threads.add((message.chat_id, thread)) or thread == message.message_id:
            return message
        replies: list[dict[str, Any]] = []
        cursor: str | None = None
        try:
            for _ in range(REPLIES_PAGES):
                answer = await self._client.conversations_replies(
                    channel=message.chat_id, ts=thread, limit=REPLIES_PAGE, cursor=cursor
                )
                replies.extend(m for m in answer.get("messages") or () if isinstance(m, dict))
                cursor = (answer.get("response_metadata") or {}).get("next_cursor") or None
                if not cursor:
                    break
        except SlackApiError as exc:
            logger.warning("slack: reading a thread's history failed (%s)", error_code(exc))
        except (ClientError, TimeoutError, OSError) as exc:
            logger.warning("slack: reading a thread's history failed (%s)", type(exc).__name__)
        context = thread_context(
            replies, before_ts=message.message_id, me=me, limit=self._context_messages
        )
        return replace(message, text=context + message.text) if context else message

    # ------------------------------------------------------------------- outbound

    async def send(self, message: OutboundMessage) -> SentMessage:
        thread = message.thread_id or message.reply_to_message_id
        answer = await self._client.chat_postMessage(
            channel=message.chat_id, text=to_mrkdwn(message.text), thread_ts=thread
        )
        channel = str(answer.get("channel") or message.chat_id)
        return SentMessage(channel, str(answer["ts"]), message.thread_id)

    async def edit(self, sent: SentMessage, text: str) -> None:
        await self._client.chat_update(
            channel=sent.chat_id, ts=sent.message_id, text=to_mrkdwn(text)
        )

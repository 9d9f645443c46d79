"""Telegram, through python-telegram-bot's ``Application`` on the gateway's event loop.

Long polling by default (``getUpdates``; one poller per bot token — a second one
gets 409 Conflict); with ``telegram.webhook_url`` set, Telegram posts updates to
``WEBHOOK_PATH`` on the gateway's HTTP server instead, each request checked
against ``telegram.webhook_secret``. Either way updates that queued up while the
gateway was down are processed unless ``telegram.drop_pending_updates``.

Inbound: ``telegram_updates`` maps updates to messages, ``telegram_intake`` hands
them to the runner in order per chat and merges split pastes. Outbound
(``_outbound``): ``telegram_send`` formats, paces (one budget per chat), retries and falls back to
plain text. The adapter never logs the token or message text above DEBUG.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any, TypeVar

from aiohttp import web
from telegram.error import BadRequest, Conflict, InvalidToken, NetworkError, TelegramError

from gateway.adapters._base import AdapterCapabilities, CommandInfo
from gateway.adapters._intake import RouteHandler, SharedBudgets
from gateway.adapters._support import Backoff, Sometimes, retrying
from gateway.adapters._text_split import utf16_length
from gateway.adapters.telegram._bot import build_application, token_of
from gateway.adapters.telegram._buttons import answer_press
from gateway.adapters.telegram._inbound import SKIP_LOG_INTERVAL, Inbound
from gateway.adapters.telegram._intake import Intake
from gateway.adapters.telegram._menu import publish_descriptions, publish_menus
from gateway.adapters.telegram._outbound import TelegramOutbound
from gateway.adapters.telegram._pacing import ChatPacer
from gateway.adapters.telegram._send import TelegramSender
from gateway.adapters.telegram._settings import TelegramSettings
from gateway.adapters.telegram._updates import (
    BotIdentity,
)
from gateway.clock import Clock, SystemClock
from gateway.errors import (
    ConfigError,
    GatewayError,
    InboxError,
    TokenRejected,
)
from gateway.events import InboundMessage

logger = logging.getLogger(__name__)

T = TypeVar("T")

WEBHOOK_PATH = "/telegram/webhook"
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
REFUSAL_LOG_INTERVAL = 60.0
"""Seconds between two log lines about webhook requests with a wrong secret token."""
ALLOWED_UPDATES = ("message", "callback_query")
POLL_TIMEOUT = 10.0
"""Seconds one ``getUpdates`` long poll waits for updates."""
START_ATTEMPTS = 4
"""Tries to reach Telegram at start-up (network errors only), with backoff."""
DRAIN_TIMEOUT = 10.0
BAD_TOKEN = "Telegram rejected the bot token (check TELEGRAM_BOT_TOKEN)"


class TelegramAdapter(TelegramOutbound):
    name = "telegram"
    prompt_hint = "You are talking on Telegram. Keep messages short; simple Markdown works."
    capabilities = AdapterCapabilities(
        max_text_length=4096,
        edits=True,
        typing=True,
        min_edit_interval=1.0,
        paced=True,  # ChatPacer: every path draws from the chat's and the bot's budget
        length=utf16_length,
        quotes=True,
        max_file_size=50 * 1024 * 1024,  # what the Bot API takes from a bot (sendDocument)
        voice=True,
    )

    def __init__(
        self,
        settings: TelegramSettings,
        *,
        vision: bool = False,
        poll_timeout: float = POLL_TIMEOUT,
        clock: Clock | None = None,
    ) -> None:
        super().__init__()
        try:
            token_of(settings)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        self._settings = settings
        self._vision = vision
        self._poll_timeout = poll_timeout
        self._clock = clock or SystemClock()
        self._app = build_application(
            settings, on_poll=self._note_poll, screen=self._screen, before_poll=self._before_poll
        )
        self._consumer: asyncio.Task[None] | None = None
        self._pacer = ChatPacer(now=self._clock.time, sleep=self._clock.sleep)
        self._sender = TelegramSender(
            self._app.bot,
            self._pacer,
            sleep=self._clock.sleep,
            now=self._clock.time,
        )
        self._intake = Intake(self.deliver, window=settings.merge_window_seconds, clock=self._clock)
        self._inbound = Inbound(
            bot=self._app.bot,
            sender=self._sender,
            intake=self._intake,
            record=self.record,
            record_many=self.record_many,
            settled=self.settled,
            not_recorded=self.not_recorded,
            counters=self.counters,
            vision=vision,
            skip_log=Sometimes(SKIP_LOG_INTERVAL, self._clock),
            on_press=lambda query: answer_press(self._app.bot, query, self.answer_command),
        )
        self._refusals = Sometimes(REFUSAL_LOG_INTERVAL, self._clock)
        self._me: BotIdentity | None = None
        self._started = False
        self._online = False
        self._failure: str | None = None
        self._paused = False
        self._warned_conflict = False

    # ------------------------------------------------------------------ lifecycle

    async def connect(self) -> None:
        if self._started:
            return
        try:
            await self._start()
        except BaseException as exc:
            with contextlib.suppress(Exception):
                if self._app.updater is not None and self._app.updater.running:
                    await self._app.updater.stop()
                await self._app.shutdown()
            if isinstance(exc, TokenRejected):
                self._failure = str(exc)  # reported by the gateway; the others go on
                return
            raise
        self._started = True
        self._online = True
        assert self._me is not None
        mode = "webhook" if self._settings.webhook_url else "long polling"
        logger.info("telegram connected as @%s (%s)", self._me.username, mode)

    async def _start(self) -> None:
        app = self._app
        await self._retrying("connecting to Telegram", app.initialize)
        me = app.bot.bot
        self._me = self._inbound.me = BotIdentity(me.id, me.username or "")
        settings = self._settings
        if settings.webhook_url:
            secret = settings.webhook_secret.get_secret_value() if settings.webhook_secret else ""
            await self._retrying(
                "setting the webhook",
                lambda: app.bot.set_webhook(
                    settings.webhook_url or "",
                    secret_token=secret,
                    allowed_updates=ALLOWED_UPDATES,
                    drop_pending_updates=settings.drop_pending_updates,
                ),
            )
        elif app.updater is not None:
            await app.updater.start_polling(
                timeout=timedelta(seconds=self._poll_timeout),
                bootstrap_retries=START_ATTEMPTS,
                allowed_updates=ALLOWED_UPDATES,
                drop_pending_updates=settings.drop_pending_updates,
                error_callback=self._on_poll_error,
            )
        self._consumer = asyncio.create_task(
            self._inbound.consume(app.update_queue), name="telegram-updates"
        )

    async def pause(self) -> None:
        """Stop fetching updates (webhook: answer 503), so new ones wait at Telegram."""
        self._paused = True
        updater = self._app.updater
        if updater is not None and updater.running:
            try:
                await updater.stop()
            except Exception as exc:
                logger.warning("telegram: stopping polling failed (%s)", type(exc).__name__)

    async def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        app = self._app
        steps: list[tuple[str, Callable[[], Awaitable[Any]]]] = []
        if app.updater is not None and app.updater.running:
            steps.append(("stopping polling", app.updater.stop))
        steps.append(("finishing queued updates", self._finish_queue))
        steps.append(("delivering held messages", lambda: self._intake.drain(DRAIN_TIMEOUT)))
        steps.append(("closing the connection", app.shutdown))
        for what, step in steps:
            try:
                await step()
            except Exception as exc:
                logger.warning("telegram: %s failed (%s)", what, type(exc).__name__)
        self._online = False
        logger.info("telegram stopped")

    def failure(self) -> str | None:
        return self._failure

    def mode(self) -> str:
        return "webhook" if self._settings.webhook_url else "long polling"

    def is_connected(self) -> bool:
        """Polling (or the webhook) works, updates are being processed, sends are not stuck."""
        consuming = self._consumer is not None and not self._consumer.done()
        return self._started and self._online and consuming and self._sender.healthy()

    async def _retrying(self, what: str, action: Callable[[], Awaitable[T]]) -> T:
        def note(exc: BaseException, delay: float) -> None:
            logger.warning("telegram: %s failed (%s); retrying", what, type(exc).__name__)

        try:
            return await retrying(
                action,
                attempts=START_ATTEMPTS,
                retry_on=(NetworkError,),
                give_up_on=(BadRequest, InvalidToken),
                backoff=Backoff(first=1.0, sleep=self._clock.sleep),
                on_retry=note,
            )
        except InvalidToken:
            raise TokenRejected(
                self.name,
                "Telegram rejected the bot token (401 Unauthorized on getMe); "
                "check TELEGRAM_BOT_TOKEN",
            ) from None
        except BadRequest as exc:
            raise ConfigError(f"telegram: {what} failed: {exc.message}") from None
        except NetworkError as exc:
            raise GatewayError(f"telegram: {what} failed ({type(exc).__name__})") from None

    # -------------------------------------------------------------------- inbound

    async def _finish_queue(self) -> None:
        """Let the consumer take what is queued (bounded), then stop it."""
        consumer, self._consumer = self._consumer, None
        if consumer is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._app.update_queue.join(), DRAIN_TIMEOUT)
        consumer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await consumer

    async def _before_poll(self) -> None:
        await self.durable()  # the next poll confirms the last batch: on the disk first
        await self._inbound.caught_up(self._app.update_queue)  # the last batch went on

    async def _screen(self, payload: bytes) -> bytes:
        return await self._inbound.screen(payload)

    async def read_again(self, payload: str) -> InboundMessage | None:
        return await self._inbound.read_again(payload)

    def _note_poll(self, ok: bool) -> None:
        if ok and not self._online and self._started:
            logger.info("telegram polling works again")
        self._online = ok

    def _on_poll_error(self, exc: TelegramError) -> None:
        self._online = False
        if isinstance(exc, Conflict):
            if not self._warned_conflict:
                self._warned_conflict = True
                logger.error(
                    "telegram: another process is polling this bot token (409 Conflict); "
                    "run one poller per token, or use webhooks (telegram.webhook_url)"
                )
            return
        if self._inbound.storage_failing:  # logged as what it is; not a network fault
            return
        logger.warning("telegram polling failed (%s); retrying with backoff", type(exc).__name__)

    def share_send_budgets(self, budgets: SharedBudgets) -> None:
        self._pacer.shared = budgets

    def polling_token(self) -> str | None:
        return None if self._settings.webhook_url else token_of(self._settings)

    def http_routes(self) -> list[tuple[str, str, RouteHandler]]:
        if not self._settings.webhook_url:
            return []
        return [("POST", WEBHOOK_PATH, self._webhook)]

    async def _webhook(self, request: web.Request) -> web.StreamResponse:
        secret = self._settings.webhook_secret
        expected = secret.get_secret_value().encode() if secret else b""
        given = request.headers.get(SECRET_HEADER, "").encode()
        if not expected or not hmac.compare_digest(given, expected):
            self.counters["forged_webhook_requests"] += 1
            if self._refusals.due():
                missed = self._refusals.take_missed()
                logger.warning(
                    "refused a telegram webhook request: wrong secret token%s",
                    f" ({missed} more since the last such line)" if missed else "",
                )
            return web.json_response({"error": "forbidden"}, status=403)
        if not self._started or self._paused or not self.accepting():
            return web.json_response({"error": "not ready"}, status=503)
        try:
            data = await request.json()
        except Exception as exc:
            logger.warning("refused a telegram webhook request (%s)", type(exc).__name__)
            return web.json_response({"error": "bad update"}, status=400)
        try:
            update = await self._inbound.arrived_by_webhook(data)
        except InboxError:
            return self.refuse_unrecorded()
        if update is not None:
            await self._app.update_queue.put(update)
        await self.durable()  # answered (confirmed) once the record is on the disk
        return web.json_response({"ok": True})  # (an unreadable one too: it must not come again)

    async def publish_commands(
        self, commands: Sequence[CommandInfo], admin_ids: Sequence[str]
    ) -> None:
        """The command menus per scope (see ``telegram._menu``), and the configured
        description and short description."""
        await publish_menus(self._app.bot, commands, admin_ids)
        await publish_descriptions(self._app.bot, self._settings)

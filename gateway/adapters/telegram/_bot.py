"""The python-telegram-bot ``Application`` chorus runs, and the token check of ``doctor``.

The bot token is part of every Bot API URL, so nothing here logs a URL or the text
of an exception that could carry one: httpx's request log (INFO, with the URL) is
raised to WARNING, python-telegram-bot's DEBUG log (which prints the URLs) is cut
at INFO, and errors are reported by their type.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from telegram import Bot
from telegram.error import InvalidToken, TelegramError
from telegram.ext import Application, ApplicationBuilder
from telegram.request import HTTPXRequest

from gateway.adapters._support import secret_value
from gateway.adapters.telegram._settings import TelegramSettings
from gateway.logs import WithholdText

logger = logging.getLogger(__name__)

# Bot API URLs hold the bot token: httpx logs each request's URL at INFO, and
# python-telegram-bot logs the configured URLs at DEBUG.
logging.getLogger("httpx").setLevel(logging.WARNING)
logging.getLogger("httpcore").setLevel(logging.WARNING)
logging.getLogger("telegram").setLevel(logging.INFO)
# A batch it cannot parse is printed whole (other people's messages); keep only the line.
logging.getLogger("telegram.Bot").addFilter(WithholdText("Error while parsing updates!"))
logging.getLogger("telegram.ext.Updater").addFilter(
    WithholdText("Something went wrong processing the data received from Telegram")
)

CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 30.0
"""Generous, so a send rarely times out after Telegram took it (a retry would repeat it)."""
WRITE_TIMEOUT = 30.0
POOL_TIMEOUT = 10.0
POOL_SIZE = 32

Application_ = Application[Any, Any, Any, Any, Any, Any]


class PollRequest(HTTPXRequest):
    """The long-poll connection; reports each ``getUpdates`` outcome to ``on_result``.

    Each answer goes through ``screen`` before the library parses it (the updates
    are recorded there and the library sees only their ids: see ``_inbound``). Each call
    first waits for ``before`` (the records of the last batch on the disk): the next
    ``getUpdates`` confirms that batch to Telegram.
    """

    def __init__(
        self,
        on_result: Callable[[bool], None],
        screen: Callable[[bytes], Awaitable[bytes]],
        before: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        super().__init__(
            connection_pool_size=2,
            read_timeout=READ_TIMEOUT,
            write_timeout=WRITE_TIMEOUT,
            connect_timeout=CONNECT_TIMEOUT,
            pool_timeout=POOL_TIMEOUT,
        )
        self._on_result = on_result
        self._screen = screen
        self._before = before

    async def do_request(self, *args: Any, **kwargs: Any) -> tuple[int, bytes]:
        if self._before is not None:
            await self._before()
        try:
            status, payload = await super().do_request(*args, **kwargs)
        except Exception:
            self._on_result(False)
            raise
        self._on_result(status == 200)
        if status == 200:
            payload = await self._screen(payload)
        return status, payload


def token_of(settings: TelegramSettings) -> str:
    return secret_value(settings.token, "telegram.token (TELEGRAM_BOT_TOKEN)")


def build_application(
    settings: TelegramSettings,
    *,
    on_poll: Callable[[bool], None],
    screen: Callable[[bytes], Awaitable[bytes]],
    before_poll: Callable[[], Awaitable[None]] | None = None,
) -> Application_:
    """An Application for this token, polling (``on_poll`` hears each poll) or webhook-fed."""
    builder: ApplicationBuilder[Any, Any, Any, Any, Any, Any] = (
        ApplicationBuilder()
        .token(token_of(settings))
        .request(
            HTTPXRequest(
                connection_pool_size=POOL_SIZE,
                read_timeout=READ_TIMEOUT,
                write_timeout=WRITE_TIMEOUT,
                connect_timeout=CONNECT_TIMEOUT,
                pool_timeout=POOL_TIMEOUT,
            )
        )
    )
    if settings.base_url:
        builder = builder.base_url(settings.base_url)
    if settings.base_file_url:
        builder = builder.base_file_url(settings.base_file_url)
    if settings.webhook_url:
        builder = builder.updater(None)
    else:
        builder = builder.get_updates_request(PollRequest(on_poll, screen, before_poll))
    return builder.build()


async def describe_bot(settings: TelegramSettings) -> tuple[bool, str]:
    """``getMe`` with the configured token and Bot API URL: (ok, what to tell the operator)."""
    kwargs: dict[str, Any] = {}
    if settings.base_url:
        kwargs["base_url"] = settings.base_url
    if settings.base_file_url:
        kwargs["base_file_url"] = settings.base_file_url
    bot = Bot(token_of(settings), request=HTTPXRequest(connect_timeout=CONNECT_TIMEOUT), **kwargs)
    try:
        me = await bot.get_me()
    except InvalidToken:
        return False, "Telegram rejected the bot token (check TELEGRAM_BOT_TOKEN)"
    except TelegramError as exc:
        return False, f"cannot reach the Telegram Bot API ({type(exc).__name__})"
    finally:
        try:
            await bot.shutdown()
        except Exception as exc:
            logger.debug("closing the telegram client failed (%s)", type(exc).__name__)
    mode = "webhook" if settings.webhook_url else "long polling"
    return True, f"token valid: @{me.username} (id {me.id}), {mode}"

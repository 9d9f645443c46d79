"""Sending and editing Telegram messages: paced, retried, formatted with a plain fallback.

Every request for a chat takes that chat's turn and budget (``ChatPacer``), so the
messages of one chat leave in order and within the flood limits together.
``RetryAfter`` blocks the chat for the time Telegram asks and the same request is
tried again; network errors are retried with backoff a bounded number of times.
A request that Telegram answered is never repeated, so a message goes out once;
only a connection lost after Telegram received a send but before it answered can
make the retry a second copy, and long timeouts keep that window small.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
import warnings
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar

from telegram import Bot, InputFile, Message, ReplyParameters
from telegram.constants import ChatAction
from telegram.error import (
    BadRequest,
    ChatMigrated,
    NetworkError,
    RetryAfter,
    TelegramError,
    TimedOut,
)
from telegram.warnings import PTBDeprecationWarning

from gateway.adapters._ogg import opus_seconds
from gateway.adapters._support import Backoff
from gateway.adapters.telegram._format import (
    Rendered,
    is_format_error,
    is_not_modified,
    plain,
    render,
)
from gateway.adapters.telegram._pacing import ChatPacer

logger = logging.getLogger(__name__)

T = TypeVar("T")

VOICE_FILENAME = "answer.ogg"
"""The name a spoken reply is uploaded under (OGG/Opus, what ``sendVoice`` plays)."""
STUCK_AFTER = 90.0
"""Seconds a Bot API request may be in flight before the send path counts as stuck."""
POOL_FAILURES = 3
"""Consecutive "all connections are occupied" failures that make the send path unhealthy."""
TYPING_MAX_IN_FLIGHT = 8
"""Typing requests at once, at most: the rest of the connection pool is for messages."""
MAX_FLOOD_WAIT = 600.0
"""Seconds of ``RetryAfter`` one message waits out in total before it gives up."""
MAX_NETWORK_RETRIES = 5
BACKOFF_FIRST = 1.0
BACKOFF_MAX = 30.0

Request = Callable[[str, Rendered], Awaitable[T]]
"""One Bot API call for (chat id, text): the chat id can change when a group migrates."""


def retry_seconds(exc: RetryAfter) -> float:
    """``exc.retry_after`` in seconds, whichever type this version of the SDK returns."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value = exc.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


class TelegramSender:
    """``send``/``edit``/``typing`` for the adapter, through one ``ChatPacer``."""

    def __init__(
        self,
        bot: Bot,
        pacer: ChatPacer,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._bot = bot
        self._pacer = pacer
        self._sleep = sleep
        self._now = now
        self._in_flight: dict[int, float] = {}
        self._requests = itertools.count()
        self._pool_failures = 0
        self._typing = 0

    def healthy(self) -> bool:
        """No request stuck in flight and the connection pool not exhausted."""
        now = self._now()
        stuck = any(now - started > STUCK_AFTER for started in self._in_flight.values())
        return not stuck and self._pool_failures < POOL_FAILURES

    async def request(self, request: Awaitable[T]) -> T:
        """One Bot API request, run to its end even if the caller is cancelled.

        httpcore loses a connection-pool slot for every request cancelled while it
        waits for or holds a connection (encode/httpcore#1093); enough of them and
        the pool is full for good ("Pool timeout: all connections in the connection
        pool are occupied"). Finishing each request in the background avoids that.
        """
        number = next(self._requests)
        self._in_flight[number] = self._now()
        task = asyncio.ensure_future(request)
        _keep(task)
        try:
            result = await asyncio.shield(task)
        except TimedOut as exc:
            if "pool" in str(exc).lower():
                self._pool_failures += 1
            raise
        finally:
            if task.done():
                self._in_flight.pop(number, None)
            else:
                task.add_done_callback(lambda _: self._in_flight.pop(number, None))
        self._pool_failures = 0
        return result

    async def send(
        self,
        chat_id: str,
        markdown: str,
        *,
        thread_id: str | None,
        reply_to: str | None,
        spare: bool = False,
    ) -> Message:
        """Send one message (within Telegram's limit) and return it; a ``spare`` one (a
        notice to a stranger) only with budget no other message is waiting for."""
        thread = int(thread_id) if thread_id else None
        replied = _message_number(reply_to)
        reply = ReplyParameters(replied, allow_sending_without_reply=True) if replied else None

        async def call(chat: str, text: Rendered) -> Message:
            return await self.request(
                self._bot.send_message(
                    chat,
                    text.text,
                    entities=text.entities or None,
                    message_thread_id=thread,
                    reply_parameters=reply,
                )
            )

        return await self._deliver(chat_id, markdown, call, spare=spare)

    async def voice(
        self, chat_id: str, audio: bytes, *, thread_id: str | None, reply_to: str | None
    ) -> Message:
        """``sendVoice``: ``audio`` (OGG/Opus) as a voice message, a reply to ``reply_to``, with
        its length in whole seconds (what the voice message shows)."""
        seconds = opus_seconds(audio)
        replied = _message_number(reply_to)
        reply = ReplyParameters(replied, allow_sending_without_reply=True) if replied else None
        return await self.request(
            self._bot.send_voice(
                int(chat_id),
                InputFile(audio, filename=VOICE_FILENAME),
                duration=max(1, round(seconds)) if seconds is not None else None,
                message_thread_id=int(thread_id) if thread_id else None,
                reply_parameters=reply,
            )
        )

    async def edit(self, chat_id: str, message_id: str, markdown: str) -> None:
        """Replace a sent message's text; an edit to the same text is a success."""

        async def call(chat: str, text: Rendered) -> None:
            try:
                await self.request(
                    self._bot.edit_message_text(
                        text.text,
                        chat_id=chat,
                        message_id=int(message_id),
                        entities=text.entities or None,
                    )
                )
            except BadRequest as exc:
                if not is_not_modified(exc):
                    raise

        await self._deliver(chat_id, markdown, call)

    async def ready(self, chat_id: str) -> None:
        """Until the chat's and the bot's budgets would let a message out at once."""
        await self._pacer.wait_ready(chat_id)

    async def typing(self, chat_id: str, thread_id: str | None) -> None:
        """Show "typing…", never at a message's expense: skipped while the chat is
        flood-blocked, while messages wait for the bot's budget, or when
        ``TYPING_MAX_IN_FLIGHT`` typing requests are already out. Never retried."""
        if self._pacer.blocked_for(chat_id) > 0 or not self._pacer.has_spare():
            return
        if self._typing >= TYPING_MAX_IN_FLIGHT:
            return
        self._typing += 1
        try:
            await self.request(
                self._bot.send_chat_action(
                    chat_id,
                    ChatAction.TYPING,
                    message_thread_id=int(thread_id) if thread_id else None,
                )
            )
        except RetryAfter as exc:
            self._pacer.block(chat_id, retry_seconds(exc))
        except TelegramError as exc:
            logger.debug("typing in telegram chat %s failed (%s)", chat_id, type(exc).__name__)
        finally:
            self._typing -= 1

    async def _deliver(
        self, chat_id: str, markdown: str, call: Request[T], *, spare: bool = False
    ) -> T:
        text = render(markdown)
        chat = chat_id
        flood_waited = 0.0
        failures = 0
        backoff = Backoff(first=BACKOFF_FIRST, cap=BACKOFF_MAX, sleep=self._sleep)
        async with self._pacer.turn(chat_id):
            while True:
                await self._pacer.acquire(chat, spare=spare)
                try:
                    return await call(chat, text)
                except RetryAfter as exc:
                    seconds = retry_seconds(exc)
                    if flood_waited + seconds > MAX_FLOOD_WAIT:
                        raise
                    flood_waited += seconds
                    self._pacer.block(chat, seconds)
                    logger.warning(
                        "telegram flood control in chat %s: waiting %.0fs", chat, seconds
                    )
                except ChatMigrated as exc:
                    logger.info("telegram chat %s became %s", chat, exc.new_chat_id)
                    chat = str(exc.new_chat_id)
                except BadRequest as exc:
                    if not (text.formatted and is_format_error(exc)):
                        raise
                    logger.info("telegram rejected the formatting in chat %s; sending plain", chat)
                    text = plain(markdown)
                except NetworkError as exc:
                    failures += 1
                    if failures > MAX_NETWORK_RETRIES:
                        raise
                    logger.warning(
                        "telegram request for chat %s failed (%s); retry %d in %.0fs",
                        chat,
                        type(exc).__name__,
                        failures,
                        backoff.delay,
                    )
                    await backoff.wait()


_background: set[asyncio.Future[Any]] = set()


def _keep(task: asyncio.Future[Any]) -> None:
    """Hold a request that may outlive its caller, and read its outcome when it ends."""
    _background.add(task)

    def done(finished: asyncio.Future[Any]) -> None:
        _background.discard(finished)
        if not finished.cancelled():
            finished.exception()

    task.add_done_callback(done)


def _message_number(reply_to: str | None) -> int | None:
    """The Telegram message id a reply goes under: ``reply_to`` is an inbound message's
    id, possibly marked by chorus (``"42:retry"`` is ``/retry`` sent as message 42)."""
    number = (reply_to or "").partition(":")[0]
    return int(number) if number.isdigit() else None

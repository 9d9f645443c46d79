"""Telegram updates on their way in: screened, recorded, read, handed over.

The poller confirms a batch of updates with its next ``getUpdates`` call, right
after handing the batch over. So each batch is screened (``_guard``) and every
update recorded in the durable inbox *before* the library sees it: a process
killed after that still has the update, and answers it after the restart. The
update is handed on once its record is committed; the next ``getUpdates`` (a
webhook's answer) waits until the record is on the disk too, and until the batch
before has been taken off the queue (``caught_up``): the 100 updates of the next
batch are not recorded in the middle of a burst's first turns. Each update is
parsed as it is handed on (``take``), so a batch's first message goes on before
the other 99 are read; one that cannot be read is confirmed and dropped there. An
update the inbox knows already (Telegram resending one that was not confirmed)
is confirmed and not handled again. Webhook updates are read and recorded before
the request is answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any

from telegram import Bot, CallbackQuery, Update
from telegram.error import TelegramError

from gateway import _texts as t
from gateway.adapters._support import MAX_IMAGE_BYTES, Sometimes
from gateway.adapters.telegram._guard import parsed, screen_updates
from gateway.adapters.telegram._intake import Intake
from gateway.adapters.telegram._send import TelegramSender
from gateway.adapters.telegram._updates import (
    FETCHED,
    BotIdentity,
    file_to_fetch,
    inbound_from,
    photo_to_fetch,
    with_image,
)
from gateway.errors import InboxError
from gateway.events import InboundMessage

logger = logging.getLogger(__name__)

SKIP_LOG_INTERVAL = 60.0
"""Seconds between two log lines about skipped updates, however many there are."""
CAUGHT_UP_AT_MOST = 2.0
"""Seconds at most the next poll waits for the last batch to be taken (``caught_up``)."""

Record = Callable[..., Awaitable[bool]]
"""``BaseAdapter.record``: (receipt, payload, durable=…)."""
RecordMany = Callable[..., Awaitable[list[bool]]]
"""``BaseAdapter.record_many``: (deliveries, durable=…)."""
Settled = Callable[[Sequence[str]], Awaitable[None]]
NotRecorded = Callable[[InboxError, int], None]


class Inbound:
    def __init__(
        self,
        *,
        bot: Bot,
        sender: TelegramSender,
        intake: Intake,
        record: Record,
        record_many: RecordMany,
        settled: Settled,
        not_recorded: NotRecorded,
        counters: Counter[str],
        vision: bool,
        skip_log: Sometimes,
        on_press: Callable[[CallbackQuery], Awaitable[None]] | None = None,
    ) -> None:
        self._bot = bot
        self._sender = sender
        self._intake = intake
        self._record = record
        self._record_many = record_many
        self._settled = settled
        self._not_recorded = not_recorded
        self._counters = counters
        self._vision = vision
        self._skip_log = skip_log
        self._on_press = on_press
        """Runs an inline keyboard button's press (a ``callback_query``)."""
        self.me: BotIdentity | None = None
        self.storage_failing = False
        """The last batch could not be recorded: it stays at Telegram, fetched again."""
        self._told: set[int] = set()
        """Private chats told, while the storage fails, that their message waits."""
        self._recorded: dict[int, dict[str, Any]] = {}
        """Updates screened and recorded, by id, until ``take`` reads and hands them on."""
        self._passed_over: set[int] = set()
        """Ids screened but not kept: known to the inbox already (handed out again
        while unconfirmed, their delivery is someone's: a turn's, a restart's) or
        bare. ``take`` lets each go without a word."""
        self._emptied = asyncio.Event()
        """Set when ``consume`` has handled every update queued (``caught_up``)."""

    # -------------------------------------------------------------- arrival

    async def screen(self, payload: bytes) -> bytes:
        """A ``getUpdates`` answer as the library may see it: every update reduced to its
        bare id. Each one not recorded before is recorded first and kept for ``take``,
        which reads it (the library would parse all 100 of a batch before the first
        went on)."""
        screened = screen_updates(payload)
        if screened is None:
            return payload
        if screened.skipped:
            self.note_skipped(screened.skipped)
        updates = screened.result
        try:
            fresh = await self._record_many(  # confirmed by the next poll, once on the disk
                [(str(updates[i]["update_id"]), json.dumps(updates[i])) for i in screened.handled],
                durable=False,
            )
        except InboxError as exc:  # unconfirmed: Telegram hands the batch out again
            await self._storage_failed(exc, [updates[i] for i in screened.handled])
            raise
        self._storage_works()
        taken = {index for index, new in zip(screened.handled, fresh, strict=True) if new}
        for index, data in enumerate(updates):
            if index in taken:
                self._recorded[int(data["update_id"])] = data
            else:
                self._passed_over.add(int(data["update_id"]))
        screened.answer["result"] = [{"update_id": u["update_id"]} for u in updates]
        return json.dumps(screened.answer).encode()

    async def _storage_failed(self, exc: InboxError, updates: list[dict[str, Any]]) -> None:
        self.storage_failing = True
        self._not_recorded(exc, len(updates))
        await self._tell_waiting(updates)

    def _storage_works(self) -> None:
        if self.storage_failing:
            self.storage_failing = False
            self._told.clear()

    async def _tell_waiting(self, updates: list[dict[str, Any]]) -> None:
        """Tell each person whose private message waits for the storage, once per outage."""
        for update in updates:
            message = update.get("message")
            chat = message.get("chat") if isinstance(message, dict) else None
            if not isinstance(chat, dict) or chat.get("type") != "private":
                continue
            chat_id = chat.get("id")
            if not isinstance(chat_id, int) or chat_id in self._told:
                continue
            self._told.add(chat_id)
            try:
                await self._sender.send(
                    str(chat_id), t.STORAGE_FAULT_WAIT, thread_id=None, reply_to=None
                )
            except Exception as exc:
                logger.warning("telegram: a waiting person could not be told (%s)", exc)

    async def arrived_by_webhook(self, data: object) -> Update | None:
        """The update of a webhook request, recorded; None when there is nothing to queue."""
        update = parsed(data, self._bot)
        if update is None:
            self.note_skipped(1)
            return None
        assert isinstance(data, dict)
        try:
            # answered (confirmed) once on the disk: ``TelegramAdapter._webhook``
            fresh = await self._record(str(data["update_id"]), json.dumps(data), durable=False)
        except InboxError as exc:  # the request is refused: Telegram sends it again
            await self._storage_failed(exc, [data])
            raise
        self._storage_works()
        if not fresh:
            return None  # Telegram resent one we have: confirm it, do not handle it twice
        return update

    def note_skipped(self, count: int) -> None:
        self._counters["skipped_updates"] += count
        if self._skip_log.due():
            missed = self._skip_log.take_missed()
            logger.warning(
                "telegram: skipped %d update(s) that could not be read (and %d batch(es) "
                "like it since the last line); they are confirmed and dropped",
                count,
                missed,
            )

    # ------------------------------------------------------------ hand-over

    async def consume(self, queue: asyncio.Queue[Any]) -> None:
        """Take every update the poller (or the webhook) queued; nothing it meets stops it."""
        while True:
            update = await queue.get()
            try:
                await self.take(update)
            except Exception as exc:
                self._counters["unhandled_updates"] += 1
                logger.warning(
                    "a telegram update could not be handled (%s)", type(exc).__name__, exc_info=True
                )
            finally:
                queue.task_done()
                if queue.empty():
                    self._emptied.set()
            await asyncio.sleep(0)  # a batch's first message goes on while the rest are read

    async def caught_up(self, queue: asyncio.Queue[Any]) -> None:
        """Until every update queued so far has been taken and handed on, or
        ``CAUGHT_UP_AT_MOST`` seconds (a handler that hangs does not stop the polling)."""
        if queue.empty():
            return
        self._emptied.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(CAUGHT_UP_AT_MOST):
                await self._emptied.wait()

    async def take(self, update: object) -> None:
        if not isinstance(update, Update):
            return
        receipt = str(update.update_id)
        data = self._recorded.pop(update.update_id, None)  # the library saw a bare id
        if data is not None:
            read = parsed(data, self._bot)
            if read is None:  # recorded, but unreadable: confirmed and dropped
                self.note_skipped(1)
                await self._settled([receipt])
                return
            update = read
        elif update.update_id in self._passed_over:
            self._passed_over.discard(update.update_id)  # not ours to settle: see ``screen``
            return
        if update.callback_query is not None:  # a press: answered now, never a turn
            await self._settled([receipt])
            if self._on_press is not None:
                await self._on_press(update.callback_query)
            return
        message = await self.read(update)
        if message is None:
            await self._settled([receipt])
            return
        logger.debug("telegram message %s in chat %s", message.message_id, message.chat_id)
        self._intake.put(replace(message, receipts=(receipt,)))

    async def read(self, update: Update) -> InboundMessage | None:
        me = self.me
        if me is None:
            return None
        message = inbound_from(update, me)
        if message is not None and self._vision and update.message is not None:
            photo = photo_to_fetch(update.message)
            if photo is not None:
                data = await self._fetch(photo.file_id)
                if data is not None:
                    message = with_image(message, data)
        if message is not None and update.message is not None:
            file_id = file_to_fetch(update.message)
            if file_id is not None:
                message = self._fetching(message, file_id)
        return message

    def _fetching(self, message: InboundMessage, file_id: str) -> InboundMessage:
        """``message`` whose voice note, audio file or document downloads when read."""

        async def fetch(limit: int) -> bytes | None:
            return await self._download(file_id, limit)

        attachments = tuple(
            replace(a, fetch=fetch) if a.kind in FETCHED else a for a in message.attachments
        )
        return replace(message, attachments=attachments)

    async def _download(self, file_id: str, limit: int) -> bytes | None:
        """A file's bytes when it is no larger than ``limit``, or None."""
        try:
            file = await self._sender.request(self._bot.get_file(file_id))
            if file.file_size is not None and file.file_size > limit:
                return None
            data = bytes(await self._sender.request(file.download_as_bytearray()))
        except TelegramError as exc:
            logger.warning("fetching a telegram file failed (%s)", type(exc).__name__)
            return None
        return data if len(data) <= limit else None

    async def read_again(self, payload: str) -> InboundMessage | None:
        """A recorded update, read as if it had just arrived (for a restart)."""
        update = parsed(json.loads(payload), self._bot)
        return None if update is None else await self.read(update)

    async def _fetch(self, file_id: str) -> bytes | None:
        """A photo's bytes (sizes checked before downloading), or None."""
        try:
            file = await self._sender.request(self._bot.get_file(file_id))
            if file.file_size is None or file.file_size > MAX_IMAGE_BYTES:
                return None
            return bytes(await self._sender.request(file.download_as_bytearray()))
        except TelegramError as exc:
            logger.warning("fetching a telegram photo failed (%s)", type(exc).__name__)
            return None

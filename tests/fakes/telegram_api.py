"""A local fake of the Telegram Bot API, speaking the real HTTP protocol.

``FakeTelegram`` runs an aiohttp server on 127.0.0.1 in a background thread with its
own event loop (like ``FakeOpenAI``), so sync tests (the ``chorus`` CLI) and async
tests can both use it. Point python-telegram-bot at ``base_url``/``base_file_url``.

It serves ``/bot<token>/<method>`` with JSON, form or multipart bodies as PTB sends
them: getMe, getUpdates (long poll, ``offset`` confirms; a second poller gets 409),
sendMessage, editMessageText, sendChatAction, sendDocument (a multipart upload, at
most 50 MB, kept in ``documents``), sendVoice (kept in ``voices``; see
``telegram_voice``), setMyCommands (per scope),
setMyDescription, setMyShortDescription, deleteWebhook,
setWebhook (then it delivers updates to the webhook URL with the secret header,
retrying until it gets a 200, like Telegram), getWebhookInfo, getFile and file
downloads. Every call is recorded. Tests script it: ``message()`` queues an update
from a person, ``flood()`` answers the next calls with 429 + ``retry_after``,
``reject_formatting()`` answers with "can't parse entities", ``down`` answers
everything with 502, ``confirmations_lost`` hands the same updates out again, a
chat in ``blocked`` (a person who blocked the bot) answers sends with 403
"Forbidden: bot was blocked by the user". As on Telegram, the bot may write to
a person's private chat only once they have written to it there (``started``,
filled by their private messages): otherwise a send is 403 "Forbidden: bot can't
initiate conversation with a user".
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from tests.fakes.telegram_data import (
    BOT_ID,
    BOT_USERNAME,
    TOKEN,
    ApiError,
    auto_entities,
    chat_for,
    parse_params,
    utf16_len,
    validate_entities,
)

from .loop_thread import LoopThread
from .telegram_voice import VoiceNote, send_voice

_FORMATTED_METHODS = ("sendMessage", "editMessageText")
_COMMAND_SCOPES = (
    "default",
    "all_private_chats",
    "all_group_chats",
    "all_chat_administrators",
    "chat",
    "chat_administrators",
    "chat_member",
)


def _private_chats(update: dict[str, Any]) -> set[int]:
    """The private chats an update's messages are in (a person wrote to the bot there)."""
    chats = (m.get("chat") for m in update.values() if isinstance(m, dict))
    return {
        c["id"]
        for c in chats
        if isinstance(c, dict) and c.get("type") == "private" and isinstance(c.get("id"), int)
    }


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    at: float
    status: int = 200


@dataclass
class Document:
    """A file the bot sent (``sendDocument``)."""

    chat_id: int
    message_id: int
    filename: str
    data: bytes
    caption: str


DOCUMENT_LIMIT = 50 * 1024 * 1024
"""The largest file a bot may upload (Bot API: 50 MB)."""


@dataclass
class BotMessage:
    """A message the bot sent, as the chat shows it now (edits applied)."""

    chat_id: int
    message_id: int
    text: str
    entities: list[dict[str, Any]]
    thread_id: int | None
    reply_to: int | None
    sent_at: float
    history: list[str] = field(default_factory=list)
    edited_at: list[float] = field(default_factory=list)
    reply_markup: dict[str, Any] | None = None
    """An inline keyboard sent with the message (``reply_markup``), as given."""


class FakeTelegram(LoopThread):
    thread_name = "fake-telegram"

    def __init__(self, *, token: str = TOKEN, username: str = BOT_USERNAME) -> None:
        super().__init__()
        self.token = token
        self.username = username
        self.bot_id = BOT_ID
        self.calls: list[Call] = []
        self.messages: list[BotMessage] = []
        self.commands: dict[str, list[dict[str, Any]]] = {}
        """``setMyCommands`` by scope: its type (``all_private_chats``…) or ``chat:<id>``."""
        self.description = ""
        """What ``setMyDescription`` set ("" for none)."""
        self.short_description = ""
        """What ``setMyShortDescription`` set ("" for none)."""
        self.files: dict[str, bytes] = {}
        self.documents: list[Document] = []
        """Files the bot sent with ``sendDocument``."""
        self.voices: list[VoiceNote] = []
        """Voice messages the bot sent with ``sendVoice``."""
        self.voice_forbidden: set[int] = set()
        """Private chats whose person takes no voice messages (400 VOICE_MESSAGES_FORBIDDEN)."""
        self.webhook: dict[str, Any] | None = None
        self.webhook_deliveries: list[tuple[int, int]] = []
        self.webhook_targets: list[str] = []
        """Where updates are posted instead of the webhook's URL, in turn, as a load balancer
        in front of several replicas would: a delivery that fails goes to the next one."""
        self.webhook_posts: list[tuple[int, str, int]] = []
        """``(update_id, target, status)`` of every post to ``webhook_targets``."""
        self.down = False
        self.confirmations_lost = False
        """Polls do not confirm (``offset`` is ignored): every poll hands out the same
        updates again, as Telegram does when a confirming poll never reached it."""
        self.blocked: set[int] = set()
        self.people_messages: set[tuple[int, int]] = set()
        """(chat id, message id) of every message people sent, until deleted."""
        self.deleted: list[tuple[int, int]] = []
        """(chat id, message id) of every message ``deleteMessage`` deleted."""
        self.refuse_deletes = False
        """``deleteMessage`` answers 400 "message can't be deleted" (too old, say)."""
        """Chats whose person blocked the bot: sending there is 403 Forbidden."""
        self.started: set[int] = set()
        """People who have a private chat with the bot (they wrote to it there)."""
        self.delays: dict[str, float] = {}
        """Seconds the fake takes to answer a method (``sendChatAction``: 2.0, say)."""
        self.in_flight = 0
        self.in_flight_max = 0
        self.close_connections = False
        """Close every connection after its answer, as a proxy or a busy server may."""
        self.now: Callable[[], float] = time.monotonic
        """Stamps each call (``Call.at``); a test may hand in the gateway's own clock."""
        self._pending: list[dict[str, Any]] = []
        self._update_ids = itertools.count(1)
        self._user_message_ids = itertools.count(1)
        self._bot_message_ids = itertools.count(10_000)
        self._floods: list[tuple[tuple[str, ...], int]] = []
        self._format_rejections = 0
        self._poll_generation = 0
        self._lock = threading.Lock()
        self._held: list[dict[str, Any]] | None = None
        self._waiters: list[asyncio.Future[None]] = []
        self._deliverer: asyncio.Task[None] | None = None
        self.callback_answers: dict[str, dict[str, Any]] = {}
        """``answerCallbackQuery`` parameters by callback query id."""
        self._query_ids = itertools.count(5_000)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/bot"

    @property
    def base_file_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/file/bot"

    # ------------------------------------------------------------------ lifecycle

    async def _serve(self) -> None:
        app = web.Application(middlewares=[self._outage])
        app.router.add_route("*", "/bot{token}/{method}", self._api)
        app.router.add_get("/file/bot{token}/{path:.+}", self._download)
        await self._listen(app)
        self._deliverer = asyncio.create_task(self._deliver_webhooks())

    async def _shutdown(self) -> None:
        if self._deliverer is not None:
            self._deliverer.cancel()
        await super()._shutdown()

    def _poke(self) -> None:
        """Wake every poll and the webhook deliverer (from any thread)."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _waiter(self) -> asyncio.Future[None]:
        """Register before checking state, then await: no change can slip in between."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        return waiter

    @staticmethod
    async def _sleep_on(waiter: asyncio.Future[None], timeout: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(waiter, timeout)

    # ------------------------------------------------------------------ scripting

    def add_update(self, update: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            update = {"update_id": next(self._update_ids), **update}
            self.started.update(_private_chats(update))
            if self._held is not None:
                self._held.append(update)
                return update
            self._pending.append(update)
        self._poke()
        return update

    @contextlib.contextmanager
    def at_once(self) -> Iterator[None]:
        """Updates added inside the block become available together, as it ends (a
        burst that arrives at one moment, however long building it took)."""
        with self._lock:
            self._held = []
        try:
            yield
        finally:
            with self._lock:
                held, self._held = self._held or [], None
                self._pending.extend(held)
            self._poke()

    def message(
        self,
        text: str | None,
        *,
        user_id: int = 1001,
        first_name: str = "Ann",
        chat_id: int | None = None,
        forum: bool = False,
        thread_id: int | None = None,
        reply_to: BotMessage | dict[str, Any] | None = None,
        edited: bool = False,
        **extra: Any,
    ) -> dict[str, Any]:
        """Queue a message a person sends; in a private chat unless ``chat_id`` (< 0)."""
        sender = {
            "id": user_id,
            "is_bot": False,
            "first_name": first_name,
            "username": f"u{user_id}",
        }
        message: dict[str, Any] = {
            "message_id": next(self._user_message_ids),
            "date": int(time.time()),
            "chat": chat_for(sender, chat_id, forum),
            "from": sender,
            **extra,
        }
        self.people_messages.add((message["chat"]["id"], message["message_id"]))
        if text is not None:
            message["text"] = text
            if entities := auto_entities(text):
                message["entities"] = entities
        if thread_id is not None:
            message["message_thread_id"] = thread_id
            message["is_topic_message"] = True
        if isinstance(reply_to, BotMessage):
            reply_to = self._as_message(reply_to)
        if reply_to is not None:
            message["reply_to_message"] = reply_to
        return self.add_update({"edited_message" if edited else "message": message})

    def press(
        self, sent: BotMessage, data: str, *, user_id: int = 1001, first_name: str = "Ann"
    ) -> str:
        """A person presses the inline keyboard button of ``sent`` whose ``callback_data`` is
        ``data`` (a ``callback_query`` update); the query's id."""
        buttons = [
            button for row in (sent.reply_markup or {}).get("inline_keyboard", []) for button in row
        ]
        if not any(button.get("callback_data") == data for button in buttons):
            raise AssertionError(f"no button with callback_data {data!r} on that message")
        sender = {
            "id": user_id,
            "is_bot": False,
            "first_name": first_name,
            "username": f"u{user_id}",
        }
        query_id = str(next(self._query_ids))
        query = {
            "id": query_id,
            "from": sender,
            "message": self._as_message(sent),
            "chat_instance": str(sent.chat_id),
            "data": data,
        }
        self.add_update({"callback_query": query})
        return query_id

    def flood(
        self, times: int, *, retry_after: int = 1, methods: tuple[str, ...] = _FORMATTED_METHODS
    ) -> None:
        """The next ``times`` calls of ``methods`` get 429 Too Many Requests."""
        with self._lock:
            self._floods.extend([(methods, retry_after)] * times)

    def reject_formatting(self, times: int = 1) -> None:
        """The next ``times`` formatted sends/edits get 400 "can't parse entities"."""
        with self._lock:
            self._format_rejections += times

    def pending(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._pending)

    # ---------------------------------------------------------------- inspection

    def calls_of(self, method: str, status: int | None = 200) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method and status in (None, c.status)]

    def in_chat(self, chat_id: int) -> list[BotMessage]:
        with self._lock:
            return [m for m in self.messages if m.chat_id == chat_id]

    async def wait_messages(
        self, chat_id: int, count: int, timeout: float = 15.0
    ) -> list[BotMessage]:
        await self.wait_for(lambda: len(self.in_chat(chat_id)) >= count, timeout, "messages")
        return self.in_chat(chat_id)

    # ---------------------------------------------------------------------- server

    @web.middleware
    async def _outage(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if self.down:
            return web.Response(status=502, text="Bad Gateway")
        response: web.StreamResponse = await handler(request)
        return response

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        if request.match_info["token"] != self.token:
            return web.json_response(
                {"ok": False, "error_code": 401, "description": "Unauthorized"}, status=401
            )
        params = await parse_params(request)
        call = Call(method, params, self.now())
        with self._lock:
            self.calls.append(call)
        try:
            handler = getattr(self, f"_m_{method}", None)
            if handler is None:
                raise ApiError(404, "Not Found")
            self._scripted_failure(method, params)
            if method != "getUpdates":
                self.in_flight += 1
                self.in_flight_max = max(self.in_flight_max, self.in_flight)
            try:
                if self.delays.get(method):
                    await asyncio.sleep(self.delays[method])
                result = await handler(params)
            finally:
                if method != "getUpdates":
                    self.in_flight -= 1
        except ApiError as exc:
            call.status = exc.code
            return web.json_response(exc.body(), status=exc.code)
        response = web.json_response({"ok": True, "result": result})
        if self.close_connections:
            response.force_close()
        return response

    def _scripted_failure(self, method: str, params: dict[str, Any]) -> None:
        with self._lock:
            for index, (methods, retry_after) in enumerate(self._floods):
                if method in methods:
                    del self._floods[index]
                    raise ApiError(
                        429,
                        f"Too Many Requests: retry after {retry_after}",
                        {"retry_after": retry_after},
                    )
            formatted = params.get("entities") or params.get("parse_mode")
            if method in _FORMATTED_METHODS and formatted and self._format_rejections:
                self._format_rejections -= 1
                raise ApiError(
                    400, "Bad Request: can't parse entities: unsupported start tag at byte 7"
                )

    async def _download(self, request: web.Request) -> web.Response:
        file_id = request.match_info["path"].rsplit("/", 1)[-1].split(".")[0]
        if request.match_info["token"] != self.token or file_id not in self.files:
            return web.Response(status=404)
        return web.Response(body=self.files[file_id])

    # ----------------------------------------------------------------- the methods

    def _bot_user(self) -> dict[str, Any]:
        return {
            "id": self.bot_id,
            "is_bot": True,
            "first_name": "Chorus",
            "username": self.username,
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
        }

    async def _m_getMe(self, params: dict[str, Any]) -> Any:
        return self._bot_user()

    async def _m_getUpdates(self, params: dict[str, Any]) -> Any:
        if self.webhook is not None:
            raise ApiError(409, "Conflict: can't use getUpdates method while webhook is active")
        offset = int(params.get("offset") or 0)
        timeout = float(params.get("timeout") or 0)
        limit = int(params.get("limit") or 100)
        with self._lock:
            self._poll_generation += 1
            generation = self._poll_generation
            if not self.confirmations_lost:
                self._pending = [u for u in self._pending if u["update_id"] >= offset]
        allowed = params.get("allowed_updates")
        self._poke()  # ends an older poll with 409
        deadline = time.monotonic() + timeout
        while True:
            waiter = self._waiter()
            with self._lock:
                if generation != self._poll_generation:
                    raise ApiError(409, "Conflict: terminated by other getUpdates request")
                if allowed:  # Telegram does not deliver updates of other types
                    self._pending = [u for u in self._pending if _of_types(u, allowed)]
                if self._pending:
                    return self._pending[:limit]
            left = deadline - time.monotonic()
            if left <= 0:
                return []
            await self._sleep_on(waiter, left)

    async def _m_deleteWebhook(self, params: dict[str, Any]) -> Any:
        with self._lock:
            self.webhook = None
            if params.get("drop_pending_updates") in (True, "true", "True"):
                self._pending.clear()
        return True

    async def _m_setWebhook(self, params: dict[str, Any]) -> Any:
        with self._lock:
            if params.get("drop_pending_updates") in (True, "true", "True"):
                self._pending.clear()
            self.webhook = {"url": params["url"], "secret": params.get("secret_token")}
        self._poke()
        return True

    async def _m_getWebhookInfo(self, params: dict[str, Any]) -> Any:
        url = self.webhook["url"] if self.webhook else ""
        return {"url": url, "has_custom_certificate": False, "pending_update_count": 0}

    async def _m_sendChatAction(self, params: dict[str, Any]) -> Any:
        return True

    async def _m_setMyCommands(self, params: dict[str, Any]) -> Any:
        """``commands`` (at most 100: ``command`` 1-32 of a-z, 0-9 and _, ``description``
        1-256 characters) for a ``scope`` (``default`` when absent), kept by scope: its
        ``type``, or ``chat:<id>`` for the ``chat`` scopes that name one."""
        commands = params.get("commands")
        if not isinstance(commands, list) or len(commands) > 100:
            raise ApiError(400, "Bad Request: BOT_COMMANDS_TOO_MUCH")
        for command in commands:
            name = str(command.get("command") or "")
            if not re.fullmatch(r"[a-z0-9_]{1,32}", name):
                raise ApiError(400, "Bad Request: BOT_COMMAND_INVALID")
            if not 1 <= len(str(command.get("description") or "")) <= 256:
                raise ApiError(400, "Bad Request: command description is invalid")
        scope = params.get("scope") or {"type": "default"}
        if scope.get("type") not in _COMMAND_SCOPES:
            raise ApiError(400, "Bad Request: unsupported bot command scope type")
        key = scope["type"] if "chat_id" not in scope else f"chat:{scope['chat_id']}"
        with self._lock:
            self.commands[key] = commands
        return True

    async def _m_setMyDescription(self, params: dict[str, Any]) -> Any:
        """``description``: 0-512 characters; empty (or absent) removes it."""
        text = str(params.get("description") or "")
        if len(text) > 512:
            raise ApiError(400, "Bad Request: description is too long")
        with self._lock:
            self.description = text
        return True

    async def _m_setMyShortDescription(self, params: dict[str, Any]) -> Any:
        """``short_description``: 0-120 characters; empty (or absent) removes it."""
        text = str(params.get("short_description") or "")
        if len(text) > 120:
            raise ApiError(400, "Bad Request: short description is too long")
        with self._lock:
            self.short_description = text
        return True

    async def _m_getFile(self, params: dict[str, Any]) -> Any:
        file_id = params["file_id"]
        if file_id not in self.files:
            raise ApiError(400, "Bad Request: invalid file_id")
        size = len(self.files[file_id])
        path = f"photos/{file_id}.jpg"
        return {"file_id": file_id, "file_unique_id": file_id, "file_size": size, "file_path": path}

    async def _m_sendMessage(self, params: dict[str, Any]) -> Any:
        text = str(params.get("text") or "")
        entities = params.get("entities") or []
        self._check_text(text, entities)
        chat_id = int(params["chat_id"])
        if chat_id in self.blocked:
            raise ApiError(403, "Forbidden: bot was blocked by the user")
        if chat_id > 0 and chat_id not in self.started:
            raise ApiError(403, "Forbidden: bot can't initiate conversation with a user")
        thread = params.get("message_thread_id")
        reply = params.get("reply_parameters") or {}
        markup = params.get("reply_markup")
        if markup is not None:
            _check_inline_keyboard(markup)
        now = time.monotonic()
        sent = BotMessage(
            chat_id,
            next(self._bot_message_ids),
            text,
            entities,
            int(thread) if thread is not None else None,
            reply.get("message_id"),
            now,
            [text],
            reply_markup=markup,
        )
        with self._lock:
            self.messages.append(sent)
        return self._as_message(sent)

    async def _m_sendDocument(self, params: dict[str, Any]) -> Any:
        """``document``: a new file (multipart) of at most 50 MB, or a ``file_id`` string;
        ``caption`` 0-1024 characters."""
        chat_id = int(params["chat_id"])
        if chat_id in self.blocked:
            raise ApiError(403, "Forbidden: bot was blocked by the user")
        if chat_id > 0 and chat_id not in self.started:
            raise ApiError(403, "Forbidden: bot can't initiate conversation with a user")
        document = params.get("document")
        name = (params.get("_filenames") or {}).get("document")
        if isinstance(document, str) and document.startswith("attach://"):
            field = document.removeprefix("attach://")
            document, name = params.get(field), (params.get("_filenames") or {}).get(field)
        if not isinstance(document, bytes):
            raise ApiError(400, "Bad Request: there is no document in the request")
        if len(document) > DOCUMENT_LIMIT:
            raise ApiError(413, "Request Entity Too Large")
        caption = str(params.get("caption") or "")
        if utf16_len(caption) > 1024:
            raise ApiError(400, "Bad Request: message caption is too long")
        number = next(self._bot_message_ids)
        sent = Document(chat_id, number, str(name or "file"), document, caption)
        with self._lock:
            self.documents.append(sent)
        chat = {"id": chat_id, "type": "private" if chat_id > 0 else "supergroup"}
        return {
            "message_id": sent.message_id,
            "date": int(time.time()),
            "chat": chat,
            "from": self._bot_user(),
            "caption": caption,
            "document": {
                "file_id": f"doc{sent.message_id}",
                "file_unique_id": f"doc{sent.message_id}",
                "file_name": sent.filename,
                "file_size": len(document),
            },
        }

    async def _m_sendVoice(self, params: dict[str, Any]) -> Any:
        return await send_voice(self, params)

    async def _m_answerCallbackQuery(self, params: dict[str, Any]) -> Any:
        query_id = str(params["callback_query_id"])
        text = str(params.get("text") or "")
        if len(text) > 200:
            raise ApiError(400, "Bad Request: MESSAGE_TOO_LONG")
        with self._lock:
            if query_id in self.callback_answers:
                raise ApiError(400, "Bad Request: query is too old and response timeout expired")
            self.callback_answers[query_id] = params
        return True

    async def _m_deleteMessage(self, params: dict[str, Any]) -> Any:
        chat_id, message_id = int(params["chat_id"]), int(params["message_id"])
        with self._lock:
            if (chat_id, message_id) not in self.people_messages:
                raise ApiError(400, "Bad Request: message to delete not found")
            if self.refuse_deletes:
                raise ApiError(400, "Bad Request: message can't be deleted")
            self.people_messages.discard((chat_id, message_id))
            self.deleted.append((chat_id, message_id))
        return True

    async def _m_editMessageText(self, params: dict[str, Any]) -> Any:
        text = str(params.get("text") or "")
        entities = params.get("entities") or []
        self._check_text(text, entities)
        chat_id, message_id = int(params["chat_id"]), int(params["message_id"])
        markup = params.get("reply_markup")  # absent: the message's inline keyboard is removed
        if markup is not None:
            _check_inline_keyboard(markup)
        with self._lock:
            found = [m for m in self.messages if (m.chat_id, m.message_id) == (chat_id, message_id)]
            if not found:
                raise ApiError(400, "Bad Request: message to edit not found")
            message = found[0]
            same = message.text == text and message.entities == entities
            if same and message.reply_markup == markup:
                raise ApiError(400, "Bad Request: message is not modified")
            message.text, message.entities = text, entities
            message.reply_markup = markup
            message.history.append(text)
            message.edited_at.append(time.monotonic())
        return self._as_message(message)

    def _check_text(self, text: str, entities: list[dict[str, Any]]) -> None:
        if not text.strip():
            raise ApiError(400, "Bad Request: message text is empty")
        if utf16_len(text) > 4096:
            raise ApiError(400, "Bad Request: message is too long")
        validate_entities(text, entities)

    def _as_message(self, sent: BotMessage) -> dict[str, Any]:
        chat = {"id": sent.chat_id, "type": "private" if sent.chat_id > 0 else "supergroup"}
        message: dict[str, Any] = {
            "message_id": sent.message_id,
            "date": int(time.time()),
            "chat": chat,
            "from": self._bot_user(),
            "text": sent.text,
        }
        if sent.entities:
            message["entities"] = sent.entities
        if sent.reply_markup is not None:
            message["reply_markup"] = sent.reply_markup
        if sent.thread_id is not None:
            message["message_thread_id"] = sent.thread_id
            message["is_topic_message"] = True
        return message

    # -------------------------------------------------------------------- webhooks

    async def _deliver_webhooks(self) -> None:
        turn = itertools.count()
        timeout = aiohttp.ClientTimeout(total=30)
        async with aiohttp.ClientSession(timeout=timeout) as client:
            while True:
                waiter = self._waiter()
                with self._lock:
                    hook = self.webhook
                    update = self._pending[0] if hook and self._pending else None
                if hook is None or update is None:
                    await self._sleep_on(waiter, 1.0)
                    continue
                headers = {}
                if hook["secret"]:
                    headers["X-Telegram-Bot-Api-Secret-Token"] = hook["secret"]
                status = 0
                targets = list(self.webhook_targets)
                url = targets[next(turn) % len(targets)] if targets else hook["url"]
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    async with client.post(url, json=update, headers=headers) as response:
                        status = response.status
                with self._lock:
                    self.webhook_deliveries.append((update["update_id"], status))
                    if targets:
                        self.webhook_posts.append((update["update_id"], url, status))
                    if status == 200 and self._pending and self._pending[0] is update:
                        self._pending.pop(0)
                if status != 200:
                    await asyncio.sleep(0.05 if targets else 0.2)


def _of_types(update: dict[str, Any], allowed: list[str]) -> bool:
    return any(kind in update for kind in allowed)


def _check_inline_keyboard(markup: Any) -> None:
    """An ``InlineKeyboardMarkup`` as the Bot API takes it: rows of buttons, each with a
    text and ``callback_data`` of 1-64 bytes (or a url)."""
    rows = markup.get("inline_keyboard") if isinstance(markup, dict) else None
    if not isinstance(rows, list):
        raise ApiError(400, "Bad Request: can't parse reply keyboard markup JSON object")
    for row in rows:
        for button in row:
            if not button.get("text"):
                raise ApiError(
                    400, "Bad Request: text buttons are unallowed in the inline keyboard"
                )
            data = button.get("callback_data")
            if data is not None and not 1 <= len(str(data).encode()) <= 64:
                raise ApiError(400, "Bad Request: BUTTON_DATA_INVALID")

"""Slack's busy indicator: a sign, while the model works, that an answer is coming.

Slack shows apps no typing indicator. In an assistant thread (one Slack announced
with ``assistant_thread_started``, remembered a while) the thread's status says
"is thinking…" (``assistant.threads.setStatus``, set again every ``STATUS_RENEW``
seconds: Slack drops it after two minutes); anywhere else the person's message
gets a reaction (:hourglass_flowing_sand:, ``reactions.add``). The sign goes when the
answer starts (the bot's first post in that thread: Slack clears a thread status by
itself then, the reaction is removed) or, when the turn ends without one (a failure,
a stop), ``GRACE`` seconds after it (``reactions.remove``, or an empty status).

Each call runs in the background, so a slow Slack never delays an answer, and a
removal waits for its own ``reactions.add``. Without ``reactions:write`` there is one
WARNING naming the scope and no reaction after it; other failures are DEBUG lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import ClientError
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from gateway.adapters._support import RecentValues
from gateway.adapters.slack._client import error_code
from gateway.events import InboundMessage

logger = logging.getLogger(__name__)

REACTION = "hourglass_flowing_sand"
STATUS = "is thinking…"
ASSISTANT_THREADS = 10_000
ASSISTANT_TTL = 7 * 86400.0
"""Assistant threads remembered (most recent first), each for a week."""
STATUS_RENEW = 60.0
"""Seconds between settings of one status (Slack drops it after two minutes)."""
GRACE = 2.0
"""Seconds a sign stays after its turn ended, for the answer posted right after it."""
ALREADY = frozenset({"already_reacted"})
NO_SCOPE = frozenset({"missing_scope", "not_allowed_token_type", "no_permission"})

Kind = Literal["status", "reaction"]


@dataclass
class _Sign:
    chat_id: str
    thread: str | None
    message_id: str
    kind: Kind
    shown: asyncio.Task[bool]
    cleared: bool = False
    ending: bool = False
    answer: asyncio.Event = field(default_factory=asyncio.Event)


def _thread_of(msg: InboundMessage) -> str | None:
    """The thread an answer to ``msg`` goes to (as ``SlackAdapter.send`` posts it)."""
    return msg.thread_id or (None if msg.is_direct else msg.message_id)


class BusyIndicator:
    def __init__(self, client: AsyncWebClient) -> None:
        self._client = client
        self._signs: dict[tuple[str, str], _Sign] = {}
        self._assistant: RecentValues[bool] = RecentValues(ASSISTANT_THREADS, ttl=ASSISTANT_TTL)
        self._reactions = True
        self._statuses = True
        self._work: set[asyncio.Task[Any]] = set()

    def assistant_thread(self, chat_id: str, thread_ts: str) -> None:
        """Slack said this thread is an assistant thread (``assistant_thread_started``)."""
        self._assistant.put((chat_id, thread_ts), True)

    def is_assistant_thread(self, chat_id: str, thread_ts: str | None) -> bool:
        return thread_ts is not None and bool(self._assistant.get((chat_id, thread_ts)))

    def show(self, msg: InboundMessage) -> bool:
        """Start the sign for ``msg`` (in the background); False when there is none."""
        key = (msg.chat_id, msg.message_id)
        if key in self._signs:
            return True
        if not msg.message_id[:1].isdigit():  # a slash command or a click: no message
            return False
        thread = _thread_of(msg)
        status = self._statuses and msg.thread_id is not None
        status = status and self.is_assistant_thread(msg.chat_id, msg.thread_id)
        if not status and not self._reactions:
            return False
        kind: Kind = "status" if status else "reaction"
        shown = self._spawn(self._show(msg, kind))
        sign = _Sign(msg.chat_id, thread, msg.message_id, kind, shown)
        self._signs[key] = sign
        if kind == "status":
            self._spawn(self._keep_status(sign))
        return True

    def answered(self, chat_id: str, thread: str | None) -> None:
        """The bot posted into this thread: the answer started, the signs there go."""
        for sign in self._signs.values():
            if sign.cleared or sign.chat_id != chat_id or sign.thread != thread:
                continue
            sign.cleared = True
            sign.answer.set()
            if sign.kind == "reaction":  # Slack clears a thread status when the app posts
                self._spawn(self._clear(sign))

    def hide(self, msg: InboundMessage) -> None:
        """The turn ended: the sign goes with the answer posted right after, or after
        ``GRACE`` seconds without one (a failure, a stop)."""
        sign = self._signs.get((msg.chat_id, msg.message_id))
        if sign is not None:
            sign.ending = True
            self._spawn(self._expire(sign))

    async def _expire(self, sign: _Sign) -> None:
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(sign.answer.wait(), GRACE)
            if not sign.cleared:
                sign.cleared = True
                await self._clear(sign)
        finally:
            self._signs.pop((sign.chat_id, sign.message_id), None)

    async def close(self, timeout: float) -> None:
        """Let the calls under way finish (a removal most of all), then stop them."""
        if self._work:
            await asyncio.wait(set(self._work), timeout=timeout)
        for task in list(self._work):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def _spawn(self, work: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.create_task(work, name="slack-busy")
        self._work.add(task)
        task.add_done_callback(self._work.discard)
        return task

    async def _show(self, msg: InboundMessage, kind: Kind) -> bool:
        if kind == "status" and msg.thread_id is not None:
            if await self._call(
                "assistant.threads.setStatus",
                self._client.assistant_threads_setStatus(
                    channel_id=msg.chat_id, thread_ts=msg.thread_id, status=STATUS
                ),
            ):
                return True
            sign = self._signs.get((msg.chat_id, msg.message_id))
            if sign is not None:  # the status was refused: the reaction instead
                sign.kind = "reaction"
        if not self._reactions:
            return False
        return await self._call(
            "reactions.add",
            self._client.reactions_add(
                channel=msg.chat_id, timestamp=msg.message_id, name=REACTION
            ),
        )

    async def _keep_status(self, sign: _Sign) -> None:
        """Set the status again while the turn goes on: Slack drops it after two minutes."""
        if not await sign.shown:
            return
        renewed = False
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(sign.answer.wait(), STATUS_RENEW)
            if sign.kind != "status" or sign.thread is None:
                return
            if sign.cleared or sign.ending:
                # a renewal may have reached Slack after the answer cleared the status,
                # before the answer was seen here: no status after the answer
                if renewed:
                    await self._status(sign, "")
                return
            await self._status(sign, STATUS)
            renewed = True
            if sign.cleared or sign.ending:  # the answer came meanwhile: no status after it
                await self._status(sign, "")
                return

    async def _status(self, sign: _Sign, status: str) -> None:
        assert sign.thread is not None
        await self._call(
            "assistant.threads.setStatus",
            self._client.assistant_threads_setStatus(
                channel_id=sign.chat_id, thread_ts=sign.thread, status=status
            ),
        )

    async def _clear(self, sign: _Sign) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            if not await sign.shown:
                return
        if sign.kind == "status" and sign.thread is not None:
            await self._call(
                "assistant.threads.setStatus",
                self._client.assistant_threads_setStatus(
                    channel_id=sign.chat_id, thread_ts=sign.thread, status=""
                ),
            )
            return
        await self._call(
            "reactions.remove",
            self._client.reactions_remove(
                channel=sign.chat_id, timestamp=sign.message_id, name=REACTION
            ),
        )

    async def _call(self, method: str, call: Coroutine[Any, Any, Any]) -> bool:
        try:
            await call
        except SlackApiError as exc:
            code = error_code(exc)
            if code in ALREADY:
                return True
            if code in NO_SCOPE:
                self._give_up(method, exc)
                return False
            logger.debug("slack: %s failed (%s)", method, code)
            return False
        except (ClientError, TimeoutError, OSError) as exc:
            logger.debug("slack: %s failed (%s)", method, type(exc).__name__)
            return False
        return True

    def _give_up(self, method: str, exc: SlackApiError) -> None:
        needed = str(exc.response.get("needed") or "")
        if method.startswith("reactions"):
            if self._reactions:
                scope = needed or "reactions:write"
                logger.warning(
                    "slack: no busy indicator: the app may not add reactions (add the "
                    "%s scope and reinstall the app)",
                    scope,
                )
            self._reactions = False
        elif self._statuses:
            logger.warning(
                "slack: assistant threads get a reaction, not a status: Slack refused "
                "assistant.threads.setStatus (%s)",
                error_code(exc),
            )
            self._statuses = False

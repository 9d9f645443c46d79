"""``TurnRunner``: one turn of a session, from its messages to the delivered answer.

The session manager hands it a batch of queued messages and the session's
agent. It writes the answer in one of ``sessions.max_concurrent_turns`` slots
(``answer_slots``: held while the agent writes, not while the answer waits for
the platform's rate budget), streams it through ``Replies`` with the typing
indicator up, and records what was shown — and the finished answer, before it
is delivered — in the durable inbox so a restart finishes or repeats the same
message. One deadline covers the whole answer (``llm.turn_timeout_seconds``); a
late first word brings a "still working" note. It is the turn's one catch
point: whatever fails, the person gets one apology and the log one traceback (a
model that cannot be reached: a warning; words already shown stay, ended by a
note); a turn stopped by ``/stop`` or an interrupting message ends its shown
text with a note. The messages are settled once the answer is delivered (or
apologised for); a turn cut by a shutdown leaves them pending for the restart.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from agent import tracing
from agent.agent import Agent
from agent.context import ImageInput
from agent.errors import BudgetExhausted, LLMError, LLMUnavailable
from agent.llm import Usage
from agent.tracing import steps
from agent.usage import Charge
from gateway import _texts as t
from gateway.adapters import Replies, ReplyStream, platform_spec
from gateway.config import LiveSettings
from gateway.errors import FencedError
from gateway.events import (
    Attachment,
    InboundMessage,
    SessionKey,
    turn_ref,
)
from gateway.media import SpokenReplies
from gateway.ops import Activity, Metrics
from gateway.sessions._inbox_keeper import InboxKeeper
from gateway.sessions._live import LiveSession, merge_texts, others_in, platform_ids, speaker_of
from gateway.sessions._start_gate import StartGate
from memory.errors import SessionFenced
from memory.paths import UserKey
from memory.transcripts import Fence, PlatformIds

__all__ = ["TurnBudget", "TurnRunner", "images_of"]

logger = logging.getLogger(__name__)

STILL_WORKING_SECONDS = 15.0
"""With no word of the answer after this long (or a quarter of ``llm.turn_timeout_seconds``,
when that is shorter), the person is told the turn is still being worked on."""

AgentOf = Callable[[LiveSession], Awaitable[Agent]]
"""The session's agent, built on demand (``SessionManager.agent_for``)."""
FenceOf = Callable[[SessionKey], Callable[[], Awaitable[None]]]
"""Several replicas: a check, run before each send, edit and transcript write of a turn,
that raises ``FencedError`` once this replica lost the session's lease."""


class TurnBudget(Protocol):
    """The person's budget as a turn sees it (``gateway.budgets.BudgetMeter``)."""

    async def check(self, person: str, chat: str | None = None) -> None:
        """Raise ``BudgetExhausted`` (its text for the person) when no turn may start."""
        ...

    async def notice(self, person: str, chat: str | None = None) -> str | None:
        """A heads-up for a person near a limit, once a period; else None."""
        ...


def images_of(msg: InboundMessage, vision: bool) -> list[Attachment]:
    """Images the model can see: fetched ones, when ``llm.vision`` is on."""
    if not vision:
        return []
    return [a for a in msg.attachments if a.kind == "image" and a.data]


class TurnRunner:
    def __init__(
        self,
        live: LiveSettings,
        *,
        replies: Replies,
        keeper: InboxKeeper | None,
        metrics: Metrics,
        activity: Activity,
        fence_of: FenceOf | None = None,
        budget: TurnBudget | None = None,
        spoken: SpokenReplies | None = None,
    ) -> None:
        """``spoken``: reads a finished answer out for the people who asked (``/voice on``)."""
        self._live = live
        self._spoken = spoken
        self._budget = budget
        self._fence_of = fence_of
        self._replies = replies
        self._keeper = keeper
        self._metrics = metrics
        self._activity = activity
        self.answer_slots = asyncio.Semaphore(live.current.sessions.max_concurrent_turns)
        self._starts = StartGate()
        self._settling: set[asyncio.Task[None]] = set()

    async def run(self, live: LiveSession, batch: list[InboundMessage], agent_of: AgentOf) -> None:
        """Answer ``batch`` in ``live``'s session. Never raises but for cancellation."""
        shown: list[ReplyStream] = []
        refs, person = [turn_ref(m) for m in batch], str(batch[-1].user_key)
        try:
            with tracing.current().turn(refs, live.session_id, person):
                await self._answer(live, batch, agent_of, shown)
        except asyncio.CancelledError:
            raise
        except (FencedError, SessionFenced):  # the new owner answers and settles them
            logger.info("turn of session %s stopped: another replica has it", live.session_id)
            return
        except Exception as exc:
            await self._apologise(live.session_id, batch[-1], exc, shown)
        # off the turn's path: the session counts as active from the answer, not the bookkeeping
        task = asyncio.create_task(self.settle(batch, _fence(live)))
        self._settling.add(task)
        task.add_done_callback(self._settling.discard)

    async def _apologise(
        self, session_id: str, last: InboundMessage, exc: Exception, shown: list[ReplyStream]
    ) -> None:
        """The one apology: it replaces what the answer showed so far, or comes on its own.
        Not into a chat the bot may not write to: that is logged calmly instead."""
        if self._replies.walled(last, exc):
            return
        if isinstance(exc, BudgetExhausted):  # the meter logged it; the person is told why
            text = str(exc)
        elif isinstance(exc, LLMError):
            logger.warning("turn of session %s failed: %s", session_id, exc)
            text = t.LLM_UNREACHABLE
        else:
            logger.exception("turn of session %s failed", session_id)
            text = t.APOLOGY
        try:
            if shown and isinstance(exc, LLMError) and shown[0].shown:
                await shown[0].abort(t.CUT_OFF_NOTE)  # the words shown stay, ended by a note
                self._replies.counted(last.platform)
            elif shown:  # the answer's messages (also ones a restart left) end in it
                await shown[0].finish(text)
                self._replies.counted(last.platform)
            else:
                await self._replies.notice(last, text, kind="error")
        except Exception as failed:
            logger.warning("the apology could not be delivered (%s)", type(failed).__name__)

    def _track(self, work: Awaitable[object]) -> None:
        """Run ``work`` after the turn; ``drain`` waits for it at shutdown."""

        async def run() -> None:
            await work

        task = asyncio.create_task(run())
        self._settling.add(task)
        task.add_done_callback(self._settling.discard)

    async def settle(self, batch: list[InboundMessage], fence: Fence | None = None) -> None:
        """Nothing more is owed for these messages."""
        if self._keeper is not None:
            await self._keeper.settle(batch, fence)
            steps.step("settle")

    async def drain(self, timeout: float) -> None:
        """Wait (at most ``timeout`` seconds) for the settling of finished turns."""
        if self._settling:
            await asyncio.wait(list(self._settling), timeout=max(0.1, timeout))

    async def _answer(
        self,
        live: LiveSession,
        batch: list[InboundMessage],
        agent_of: AgentOf,
        shown: list[ReplyStream],
    ) -> None:
        last = batch[-1]
        person, chat = str(_person(live, last)), f"{last.platform}:{last.chat_id}"
        if self._budget is not None:  # spent: the turn is not started, no LLM call made
            await self._budget.check(person, chat)
        agent = await agent_of(live)
        steps.step("agent")
        agent.fence = fence = self._fence_of(live.key) if self._fence_of else None
        agent.epoch = live.epoch if live.epoch is not None or fence is None else 0
        receipts = [r for m in batch for r in m.receipts]
        on_shown = (
            self._keeper.noting_shown(last.platform, receipts, _fence(live))
            if self._keeper
            else None
        )
        resume = next((m.resume for m in batch if m.resume), ())  # a half answer to finish
        stream = self._replies.stream(
            last,
            streaming=self._streaming(last),
            resume=resume,
            on_shown=on_shown,
            reply_to=self._covers(batch),
            fence=fence,
        )
        shown.append(stream)
        asked = asyncio.Event()  # the turn's request has left: show the typing sign
        typing = self._replies.typing(last, after=asked)
        before = agent.usage
        started = time.monotonic()
        vision = self._live.current.llm.vision
        images = [
            ImageInput(a.data, a.mime_type or "image/jpeg")
            for m in batch
            for a in images_of(m, vision)
            if a.data is not None
        ]
        live.turn_by = frozenset(m.user_key for m in batch)
        live.turn = asyncio.create_task(
            self._write(
                agent,
                merge_texts(batch),
                stream.push,
                images,
                _speaker(live, batch),
                others_in(batch),
                platform_ids(batch),
                asked,
            )
        )
        still = asyncio.create_task(self._still_working(last, stream))
        try:
            answer = await live.turn
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
            await stream.abort(t.STOPPED_NOTE)
            return
        finally:
            still.cancel()
            typing.cancel()
            live.turn = None
        steps.step("answer")
        if self._keeper is not None:  # written ahead: a restart delivers it, not asks again
            await self._keeper.answering(batch, answer, _fence(live))
        await stream.finish(answer)
        steps.step("delivery")
        self._replies.counted(last.platform)
        if self._spoken is not None:  # off the turn's path, like the settling
            self._track(
                self._spoken.deliver(last, answer, Charge(person, live.session_id, "speech", chat))
            )
        self._metrics.observe_turn(time.monotonic() - started)
        self._count(before, agent.usage)
        await self._heads_up(last, person, chat)

    async def _heads_up(self, last: InboundMessage, person: str, chat: str) -> None:
        """Tell the person, once a period, that they are near a limit."""
        if self._budget is None:
            return
        try:
            text = await self._budget.notice(person, chat)
            if text is not None:
                await self._replies.notice(last, text)
        except Exception as exc:
            logger.warning("the budget notice was not sent (%s)", type(exc).__name__)

    async def _write(
        self,
        agent: Agent,
        text: str,
        on_delta: Callable[[str], Awaitable[None]],
        images: list[ImageInput],
        speaker: UserKey | None,
        others: bool = False,
        platform_message_id: PlatformIds = None,
        started: asyncio.Event | None = None,
    ) -> str:
        """The agent's answer, written in one of ``answer_slots``; its delivery (which may
        wait for the platform's rate budget) holds none. ``started`` is set once the
        turn's start is over (``StartGate``)."""
        limit = self._live.current.llm.turn_timeout_seconds
        async with self.answer_slots, self._starts.start(started):
            try:
                async with asyncio.timeout(limit) as deadline:
                    return await agent.run_turn(
                        text,
                        on_delta=on_delta,
                        images=images,
                        speaker=speaker,
                        others_content=others,
                        platform_message_id=platform_message_id,
                    )
            except TimeoutError:
                if not deadline.expired():
                    raise
                raise LLMUnavailable(
                    f"no answer within llm.turn_timeout_seconds ({limit:g} s)"
                ) from None

    async def _still_working(self, msg: InboundMessage, stream: ReplyStream) -> None:
        """Tell the person the turn goes on when its first word is late."""
        limit = self._live.current.llm.turn_timeout_seconds
        await asyncio.sleep(min(STILL_WORKING_SECONDS, limit / 4))
        if stream.text.strip():
            return
        try:
            await self._replies.notice(msg, t.STILL_WORKING)
        except Exception as exc:
            logger.warning("the still-working note could not be sent (%s)", type(exc).__name__)

    def _covers(self, batch: list[InboundMessage]) -> str | None:
        """What one answer to several messages replies to, where a reply quotes: the first
        of them, so the person sees that it covers that one and those after it."""
        adapter = self._replies.adapter(batch[0].platform)
        if len(batch) < 2 or adapter is None or not adapter.capabilities.quotes:
            return None
        return batch[0].message_id

    def _streaming(self, msg: InboundMessage) -> bool:
        spec = platform_spec(msg.platform)
        return spec is None or spec.streams(spec.section_of(self._live.current), msg)

    def _count(self, before: Usage, used: Usage) -> None:
        self._activity.turn(
            used.prompt_tokens
            + used.completion_tokens
            - before.prompt_tokens
            - before.completion_tokens
        )
        for kind, n in (
            ("prompt", used.prompt_tokens - before.prompt_tokens),
            ("completion", used.completion_tokens - before.completion_tokens),
            ("cached", used.cached_tokens - before.cached_tokens),
            ("reasoning", used.reasoning_tokens - before.reasoning_tokens),
        ):
            if n:
                self._metrics.tokens(kind, n)


def _fence(live: LiveSession) -> Fence | None:
    """What the session's inbox writes are fenced with: its epoch on this replica (None
    in a single process, where nothing is fenced)."""
    return None if live.epoch is None else (live.session_id, live.epoch)


def _person(live: LiveSession, last: InboundMessage) -> UserKey:
    """Whose budget a turn counts against: the person the session is with (accounts
    linked into one person share it), or in a shared session the message's writer."""
    return last.user_key if live.user_key.chat else live.user_key


def _speaker(live: LiveSession, batch: list[InboundMessage]) -> UserKey | None:
    """Who wrote the turn: in a person's own session the person (whichever of their
    accounts wrote), in a shared one the writer (None: several)."""
    speaker = speaker_of(batch)
    return speaker if live.user_key.chat or speaker is None else live.user_key

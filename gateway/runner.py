"""GatewayRunner: every platform's messages in, the agent's replies out.

``handle(msg)`` is the one intake: dedupe, input checks, group gating,
authorization, rate limit, slash commands, then the session's queue. It is
also the one catch point: an unexpected error is logged with its traceback
and the user gets a short generic apology, never the exception text.

Everything the runner uses is built in the wiring (``gateway.app``) and
passed in; commands get their own narrow ``CommandServices``, not the runner.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from agent.agent import Agent
from agent.context import ImageInput
from gateway import _texts as t
from gateway._inbox_keeper import InboxKeeper
from gateway.access import (
    Authorizer,
    Deduplicator,
    RateDecision,
    RateLimiter,
    normalize_user_key,
)
from gateway.adapters import (
    AdapterError,
    BaseAdapter,
    CommandInfo,
    ReplyStream,
    SeenSet,
    platform_spec,
    send_text,
)
from gateway.clock import Clock
from gateway.commands import CommandContext, CommandRegistry, CommandServices, parse_command
from gateway.config import LiveSettings, Settings
from gateway.events import Attachment, InboundMessage, OutboundMessage, SentMessage
from gateway.ops import Activity, Metrics
from gateway.sessions import Inbox, LiveSession, SessionManager, merge_texts, speaker_of
from memory.paths import UserKey

logger = logging.getLogger(__name__)

MAX_INBOUND_CHARS = 32_000
REFUSAL_AUDIT_INTERVAL = 60.0
"""Seconds within which one stranger's repeats of one admin command are audited once."""
REFUSALS_REMEMBERED = 10_000
TYPING_INTERVAL = 4.0
INTAKE_AT_ONCE = 8
"""Messages through the access check at once; in a burst the rest wait in arrival order
(the session manager opens sessions and builds agents the same way)."""


class GatewayRunner:
    def __init__(
        self,
        live: LiveSettings,
        *,
        sessions: SessionManager,
        auth: Authorizer,
        rate: RateLimiter,
        dedupe: Deduplicator,
        commands: CommandRegistry,
        services: CommandServices,
        clock: Clock,
        metrics: Metrics,
        activity: Activity,
        adapters: list[BaseAdapter] | None = None,
        inbox: Inbox | None = None,
    ) -> None:
        self.live = live
        self.inbox = InboxKeeper(inbox, clock, lambda: self.settings) if inbox else None
        self.resume_inbox = True
        self.rate_check: Callable[[str], Awaitable[RateDecision]] = self._own_rate
        """Take up what the inbox holds at start (one process); replicas hand it on instead."""
        self._resumed = asyncio.Event()
        self._checking = asyncio.Semaphore(INTAKE_AT_ONCE)
        self._settling: set[asyncio.Task[None]] = set()
        self.sessions = sessions
        self.auth = auth
        self.rate = rate
        self.dedupe = dedupe
        self.commands = commands
        self.services = services
        self.clock = clock
        self.metrics = metrics
        self.activity = activity
        self.adapters: dict[str, BaseAdapter] = {}
        self._refusals = SeenSet(REFUSALS_REMEMBERED, ttl=REFUSAL_AUDIT_INTERVAL, clock=clock)
        sessions.bind(self._run_turn, self.notice)
        for adapter in adapters or []:
            self.add_adapter(adapter)
        self.metrics.set_sources(
            live_sessions=lambda: len(self.sessions.sessions),
            adapters=lambda: {name: a.is_connected() for name, a in self.adapters.items()},
            adapter_events=lambda: {
                (name, event): count
                for name, adapter in self.adapters.items()
                for event, count in adapter.counters.items()
            },
        )

    @property
    def settings(self) -> Settings:
        return self.live.current

    def add_adapter(self, adapter: BaseAdapter) -> None:
        adapter.set_handler(self.handle)
        adapter.set_command_handler(self.answer_command)
        if self.inbox is not None:
            adapter.set_inbox(self.inbox.inbox)
        self.adapters[adapter.name] = adapter
        if adapter.prompt_hint:
            self.sessions.platform_hints[adapter.name] = adapter.prompt_hint

    async def start(self) -> None:
        await self.sessions.recover(set(self.adapters))
        for adapter in self.adapters.values():
            await adapter.start()
            await self._publish_commands(adapter)
        if self.inbox is not None and self.resume_inbox:
            await self.inbox.resume(self.adapters.values(), self._take, self.notice)
        self._resumed.set()

    async def _publish_commands(self, adapter: BaseAdapter) -> None:
        """Give the platform's command menu every command; admin ones for admins only."""
        commands = [
            CommandInfo(c.name, c.help, c.admin_only, c.args) for c in self.commands.visible(True)
        ]
        keys = (normalize_user_key(entry) for entry in self.settings.auth.admins)
        admins = [
            UserKey.parse(key).id
            for key in keys
            if key is not None and UserKey.parse(key).platform == adapter.name
        ]
        try:
            await adapter.publish_commands(commands, admins)
        except AdapterError as exc:
            logger.warning("publishing %s commands failed (%s)", adapter.name, type(exc).__name__)

    # ------------------------------------------------------------------ intake

    async def handle(self, msg: InboundMessage) -> None:
        """Take one inbound message. Never raises.

        After a restart, new messages wait until the ones left pending have been
        taken up, so each person's messages keep their order.
        """
        await self._resumed.wait()
        await self._take(msg)

    async def _take(self, msg: InboundMessage) -> None:
        settle = True
        try:
            settle = await self._handle(msg)
        except Exception:
            logger.exception("handling a %s message failed", msg.platform)
            with contextlib.suppress(Exception):
                await self.notice(msg, t.APOLOGY, kind="error")
        if settle:
            await self._settle([msg])

    async def _handle(self, msg: InboundMessage) -> bool:
        """True when nothing is left to do for ``msg``; False when a turn will answer it."""
        self.metrics.message_in(msg.platform)
        self.activity.message()
        if self.dedupe.seen(msg.platform, msg.chat_id, msg.message_id):
            self.metrics.rejected("duplicate")
            return True
        command = parse_command(msg.text)
        addressed = msg.is_direct or msg.mentions_bot or msg.reply_to_bot or command is not None
        if not addressed and self.settings.gateway.group_require_mention:
            return True
        async with self._checking:
            decision = await asyncio.to_thread(self.auth.decide, msg)
        if not decision.allowed:
            self.metrics.rejected(decision.reason)
            if command is not None and self._refusals.add((msg.user_key, command[0])):
                ctx = CommandContext(msg, command[0], command[1], self.services, False)
                await self.commands.audit_refused(ctx, decision.reason)
            if decision.reply:
                await self.notice(msg, decision.reply)
            return True
        rate = await self.rate_check(msg.user_key)
        if not rate.allowed:
            self.metrics.rejected("rate_limited")
            if rate.notify:
                await self.notice(msg, t.RATE_LIMITED)
            return True
        images = self._images(msg)
        if not msg.text.strip() and not images:
            await self.notice(msg, t.ATTACHMENTS_ONLY if msg.attachments else t.EMPTY)
            return True
        if len(images) < len(msg.attachments):
            await self.notice(msg, t.ATTACHMENTS_SKIPPED)
        if len(msg.text) > MAX_INBOUND_CHARS:
            self.metrics.rejected("too_long")
            await self.notice(msg, t.TOO_LONG.format(n=len(msg.text), limit=MAX_INBOUND_CHARS))
            return True
        if command is not None:
            await self._command(msg, *command)
            return True
        if await self.sessions.submit(msg):
            return False
        if msg.receipts:
            return False  # shutting down: it stays in the inbox and is answered after the restart
        await self.notice(msg, t.SHUTTING_DOWN)
        return True

    async def _own_rate(self, user_key: str) -> RateDecision:
        return self.rate.check(user_key)

    async def _settle(self, batch: list[InboundMessage]) -> None:
        if self.inbox is not None:
            await self.inbox.settle(batch)

    async def answer_command(self, msg: InboundMessage) -> str:
        """A native slash command (Slack's ``/chorus``, Discord's application commands):
        the same checks and the one dispatch path of a typed command; the answer is
        returned for the platform to show its caller privately. Never raises."""
        await self._resumed.wait()
        self.metrics.message_in(msg.platform)
        self.activity.message()
        try:
            return await self._answer_command(msg)
        except Exception:
            logger.exception("a %s slash command failed", msg.platform)
            return t.APOLOGY

    async def _answer_command(self, msg: InboundMessage) -> str:
        name, args = parse_command(msg.text) or ("help", "")
        decision = await asyncio.to_thread(self.auth.decide, msg)
        if not decision.allowed:
            self.metrics.rejected(decision.reason)
            if self._refusals.add((msg.user_key, name)):
                ctx = CommandContext(msg, name, args, self.services, False)
                await self.commands.audit_refused(ctx, decision.reason)
            return decision.reply or t.NOT_ALLOWED.format(user_key=msg.user_key)
        if not self.rate.check(msg.user_key).allowed:
            self.metrics.rejected("rate_limited")
            return t.RATE_LIMITED
        if len(msg.text) > MAX_INBOUND_CHARS:
            self.metrics.rejected("too_long")
            return t.TOO_LONG.format(n=len(msg.text), limit=MAX_INBOUND_CHARS)
        ctx = CommandContext(msg, name, args, self.services, self.auth.is_admin(msg.user_key))
        return await self.commands.dispatch(ctx) or t.COMMAND_DONE

    async def _command(self, msg: InboundMessage, name: str, args: str) -> None:
        ctx = CommandContext(msg, name, args, self.services, self.auth.is_admin(msg.user_key))
        reply = await self.commands.dispatch(ctx)
        if reply:
            await self.notice(msg, reply)

    # ---------------------------------------------------------------- delivery

    async def notice(self, msg: InboundMessage, text: str, kind: str = "notice") -> None:
        adapter = self.adapters.get(msg.platform)
        if adapter is None:
            logger.error("no adapter for platform %s", msg.platform)
            return
        out = OutboundMessage(
            platform=msg.platform,
            chat_id=msg.chat_id,
            text=text,
            thread_id=msg.thread_id,
            reply_to_message_id=None if msg.is_direct else msg.message_id,
            kind="error" if kind == "error" else "notice",
        )
        await send_text(adapter, out)
        self.metrics.message_out(msg.platform)

    async def _run_turn(self, live: LiveSession, batch: list[InboundMessage]) -> None:
        """One turn; its messages are settled once the answer is delivered (or has failed
        with an apology). A turn cut by a shutdown leaves them pending for the restart."""
        try:
            await self._answer(live, batch)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("turn of session %s failed", live.session_id)
            with contextlib.suppress(Exception):
                await self.notice(batch[-1], t.APOLOGY, kind="error")
        # off the turn's path: the session counts as active from the answer, not the bookkeeping
        task = asyncio.create_task(self._settle(batch))
        self._settling.add(task)
        task.add_done_callback(self._settling.discard)

    async def _answer(self, live: LiveSession, batch: list[InboundMessage]) -> None:
        text = merge_texts(batch)
        last = batch[-1]
        adapter = self.adapters[last.platform]
        agent = await self.sessions.agent_for(live)
        receipts = [r for m in batch for r in m.receipts]
        stream = ReplyStream(
            adapter,
            platform=last.platform,
            chat_id=last.chat_id,
            thread_id=last.thread_id,
            reply_to=None if last.is_direct else last.message_id,
            clock=self.clock,
            streaming=self._streaming(adapter, last),
            resume=[SentMessage(last.chat_id, m, last.thread_id) for m in last.resume],
            on_shown=self.inbox.noting_shown(last.platform, receipts) if self.inbox else None,
        )
        typing = asyncio.create_task(self._keep_typing(adapter, last))
        before = agent.usage
        started = time.monotonic()
        images = [
            ImageInput(a.data, a.mime_type or "image/jpeg")
            for m in batch
            for a in self._images(m)
            if a.data is not None
        ]
        live.turn = asyncio.create_task(
            self._write_answer(agent, text, stream, images, speaker_of(batch))
        )
        try:
            answer = await live.turn
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
            await stream.abort(t.STOPPED_NOTE)
            return
        finally:
            typing.cancel()
            live.turn = None
        await stream.finish(answer)
        self.metrics.message_out(last.platform)
        self.metrics.observe_turn(time.monotonic() - started)
        used = agent.usage
        self.activity.turn(
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
                self.metrics.tokens(kind, n)

    def _images(self, msg: InboundMessage) -> list[Attachment]:
        """Images the model can see: fetched ones, when ``llm.vision`` is on."""
        if not self.settings.llm.vision:
            return []
        return [a for a in msg.attachments if a.kind == "image" and a.data]

    async def _write_answer(
        self,
        agent: Agent,
        text: str,
        stream: ReplyStream,
        images: list[ImageInput],
        speaker: str | None,
    ) -> str:
        """The agent's answer, written in one of ``sessions.max_concurrent_turns`` slots; its
        delivery (which may wait for the platform's rate budget) holds none."""
        async with self.sessions.answer_slots:
            return await agent.run_turn(text, on_delta=stream.push, images=images, speaker=speaker)

    def _streaming(self, adapter: BaseAdapter, msg: InboundMessage) -> bool:
        spec = platform_spec(adapter.name)
        if spec is not None and not spec.streams(spec.section_of(self.settings), msg):
            return False
        return adapter.capabilities.edits

    async def _keep_typing(self, adapter: BaseAdapter, msg: InboundMessage) -> None:
        if not adapter.capabilities.typing:
            return
        with contextlib.suppress(Exception):
            while True:
                await adapter.typing(msg.chat_id, msg.thread_id)
                await self.clock.sleep(TYPING_INTERVAL)

    # ---------------------------------------------------------------- shutdown

    async def shutdown(self, timeout: float | None = None) -> None:
        """Stop taking updates, finish running turns, end every session, disconnect.

        All within ``timeout`` (``gateway.shutdown_timeout``) seconds in total. The
        platforms stop delivering first, so what people send meanwhile waits at the
        platform (or in the durable inbox) for the next start instead of being
        answered "send that again".
        """
        limit = self.settings.gateway.shutdown_timeout if timeout is None else timeout
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        for adapter in self.adapters.values():
            try:
                await asyncio.wait_for(adapter.pause(), max(0.1, deadline - loop.time()))
            except Exception as exc:
                logger.warning("pausing %s failed (%s)", adapter.name, type(exc).__name__)
        await self.sessions.shutdown(max(0.1, deadline - loop.time()))
        if self._settling:
            await asyncio.wait(list(self._settling), timeout=max(0.1, deadline - loop.time()))
        for adapter in self.adapters.values():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(adapter.stop(), max(1.0, deadline - loop.time()))

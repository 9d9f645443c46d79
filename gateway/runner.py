"""GatewayRunner: the intake of every platform's messages.

``handle(msg)`` takes one message: dedupe, input checks, group gating,
authorization, rate limit, its voice notes and documents read (``gateway.media``,
in the chat's lane, after the sender was admitted), slash commands, then the
session's queue
(``gateway.sessions``, which owns the rest of the turn). Replies and notices go
down through ``Replies``. It is the intake's one catch point: an unexpected error
is logged with its traceback and the user gets a short generic apology, never
the exception text.

Everything the runner uses is built in the wiring (``gateway.app``) and
passed in; commands get their own narrow ``CommandServices``, not the runner.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time

from agent import tracing
from agent.tracing import steps
from gateway import _texts as t
from gateway.access import (
    AuthDecision,
    Authorizer,
    Deduplicator,
    RateCheck,
    RateDecision,
    normalize_user_key,
)
from gateway.adapters import AdapterError, BaseAdapter, CommandInfo, Replies, SeenSet
from gateway.clock import Clock
from gateway.commands import (
    CommandContext,
    CommandRegistry,
    CommandServices,
    PairingDesk,
    SecretDesk,
    parse_command,
)
from gateway.config import LiveSettings, Settings
from gateway.events import InboundMessage, turn_ref
from gateway.media import MediaReader, transcription_charge
from gateway.ops import Activity, Metrics
from gateway.sessions import InboxKeeper, SessionManager, images_of
from memory.paths import UserKey

logger = logging.getLogger(__name__)

MAX_INBOUND_CHARS = 32_000
REFUSAL_AUDIT_INTERVAL = 60.0
"""Seconds within which one stranger's repeats of one admin command are audited once."""
REFUSALS_REMEMBERED = 10_000
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
        rate: RateCheck,
        dedupe: Deduplicator,
        commands: CommandRegistry,
        services: CommandServices,
        clock: Clock,
        metrics: Metrics,
        activity: Activity,
        replies: Replies,
        keeper: InboxKeeper | None = None,
        secrets: SecretDesk | None = None,
        media: MediaReader | None = None,
        pairing: PairingDesk | None = None,
    ) -> None:
        self.live = live
        self.secrets = secrets
        """Takes the value a ``/secret set`` waits for before anything else sees it."""
        self.keeper = keeper
        self.media = media
        self.pairing = pairing
        """Tells the admins of a pairing code just issued."""
        self.replies = replies
        self._open = asyncio.Event()
        self._checking = asyncio.Semaphore(INTAKE_AT_ONCE)
        self.sessions = sessions
        self.auth = auth
        self.rate = rate
        self.dedupe = dedupe
        self.commands = commands
        self.services = services
        self.clock = clock
        self.metrics = metrics
        self.activity = activity
        self._refusals = SeenSet(REFUSALS_REMEMBERED, ttl=REFUSAL_AUDIT_INTERVAL, clock=clock)
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

    @property
    def adapters(self) -> dict[str, BaseAdapter]:
        return self.replies.adapters

    def open(self) -> None:
        """Start taking messages (after what a restart left pending has been taken up)."""
        self._open.set()

    async def publish_commands(self, adapter: BaseAdapter) -> None:
        """Give the platform's command menu every command; admin ones for admins only."""
        commands = [
            CommandInfo(c.name, c.help, c.admin_only, c.args, c.aliases, c.in_groups, c.subcommands)
            for c in self.commands.visible(True, adapter.name)
        ]
        texts = (normalize_user_key(entry) for entry in self.settings.auth.admins)
        keys = (UserKey.parse(text) for text in texts if text is not None)
        admins = [key.id for key in keys if key.platform == adapter.name]
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
        await self._open.wait()
        await self.take(msg)

    async def take(self, msg: InboundMessage) -> None:
        """``handle`` without waiting for the start (what a restart left pending)."""
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
        received = time.time_ns()
        self.metrics.message_in(msg.platform)
        self.activity.message()
        if self.dedupe.seen(msg.platform, msg.chat_id, msg.message_id):
            self.metrics.rejected("duplicate")
            return True
        if self.secrets is not None and (answer := await self.secrets.capture(msg)):
            await self.notice(msg, answer)
            return True
        command = self._command_in(msg)
        addressed = msg.is_direct or msg.mentions_bot or msg.reply_to_bot or command is not None
        if not addressed and self.settings.gateway.group_require_mention:
            return True
        if not await self._admitted(msg, command):
            return True
        steps.step("access")
        if command is None and self.media is not None and msg.attachments:
            reading = await self.media.read(msg, transcription_charge(msg, self.sessions))
            msg = reading.message
            if reading.problems:
                await self.notice(msg, "\n".join(reading.problems))
                if reading.nothing_left or reading.refused:
                    return True
        if not await self._readable(msg):
            return True
        if command is not None:
            await self._command(msg, *command)
            return True
        if await self.sessions.submit(msg):
            steps.step("session")
            tracing.current().submitted(turn_ref(msg), received, str(msg.user_key), msg.text)
            return False
        if msg.receipts:
            return False  # shutting down: it stays in the inbox and is answered after the restart
        await self.notice(msg, t.SHUTTING_DOWN)
        return True

    def _command_in(self, msg: InboundMessage) -> tuple[str, str] | None:
        """The command ``msg`` gives, if any.

        In a direct message, or a group message that mentions or replies to the bot
        (``/cmd@thisbot`` on Telegram), every ``/word`` is a command, unknown ones
        answered as such. Otherwise only a command the bot has is one: "/tmp is full
        again" in a group is chatter, not "Unknown command /tmp".
        """
        command = parse_command(msg.text)
        if command is None or msg.is_direct or msg.mentions_bot or msg.reply_to_bot:
            return command
        if self.commands.get(command[0]) is None:
            logger.debug("/%s in a %s group is no command of ours", command[0], msg.platform)
            return None
        return command

    async def _admitted(self, msg: InboundMessage, command: tuple[str, str] | None) -> bool:
        """Whether the sender may talk now (access, then rate); if not, they are told."""
        decision = self.auth.read_decision(msg) if self.auth.reads_locally else None
        if decision is None:  # PostgreSQL, or a stranger who may be given a pairing code
            async with self._checking:
                decision = await asyncio.to_thread(self.auth.decide, msg)
        if not decision.allowed:
            self.metrics.rejected(decision.reason)
            if command is not None and self._refusals.add((msg.user_key, command[0])):
                ctx = CommandContext(msg, command[0], command[1], self.services, False)
                await self.commands.audit_refused(ctx, decision.reason)
            if decision.reply:
                await self.notice(msg, self._refusal(decision, command), kind="stranger")
            if decision.code is not None and self.pairing is not None:
                await self.pairing.announce(msg, decision.code)
            return False
        if command is None:  # a turn is likely: its connection to the model opens meanwhile
            self.sessions.builder.warm()
        rate = await self.rate.check(msg.user_key)
        if not rate.allowed:
            self.metrics.rejected("rate_limited")
            if rate.notify:
                await self.notice(msg, self._rate_limited(rate))
            return False
        return True

    def _rate_limited(self, rate: RateDecision) -> str:
        """The notice of a message the rate limit dropped: it says so, and when to send
        it again (the limiter's wait, else the time one message takes to refill)."""
        per_minute = max(1, self.settings.auth.rate_limit_per_minute)
        wait = rate.retry_after if rate.retry_after is not None else 60 / per_minute
        return t.RATE_LIMITED.format(seconds=max(1, math.ceil(wait)))

    def _refusal(self, decision: AuthDecision, command: tuple[str, str] | None) -> str:
        """What a refused sender is told: the reason, after the greeting of ``/start``
        (unless an admin denied them)."""
        reply = decision.reply or ""
        if command is None or decision.reason == "denied":
            return reply
        greeting = self.commands.to_strangers(command[0])
        return f"{greeting}\n\n{reply}" if greeting else reply

    async def _readable(self, msg: InboundMessage) -> bool:
        """Whether there is something to answer (text, or images the model can see) within
        the size limit; if not, the sender is told why."""
        images = images_of(msg, self.settings.llm.vision)
        if not msg.text.strip() and not msg.quoted and not images:
            await self.notice(msg, t.ATTACHMENTS_ONLY if msg.attachments else t.EMPTY)
            return False
        if len(images) < len(msg.attachments):
            await self.notice(msg, t.ATTACHMENTS_SKIPPED)
        if len(msg.text) > MAX_INBOUND_CHARS:
            self.metrics.rejected("too_long")
            await self.notice(msg, t.TOO_LONG.format(n=len(msg.text), limit=MAX_INBOUND_CHARS))
            return False
        return True

    async def _settle(self, batch: list[InboundMessage]) -> None:
        if self.keeper is not None:
            await self.keeper.settle(batch)

    async def answer_command(self, msg: InboundMessage) -> str:
        """A native slash command (Slack's ``/chorus``, Discord's application commands):
        the same checks and the one dispatch path of a typed command; the answer is
        returned for the platform to show its caller privately. Never raises."""
        await self._open.wait()
        self.metrics.message_in(msg.platform)
        self.activity.message()
        try:
            return await self._answer_command(msg)
        except Exception:
            logger.exception("a %s slash command failed", msg.platform)
            return t.APOLOGY

    async def _answer_command(self, msg: InboundMessage) -> str:
        name, args = parse_command(msg.text) or ("help", "")
        decision = await asyncio.to_thread(self.auth.decide, msg, capped=False)
        if not decision.allowed:
            self.metrics.rejected(decision.reason)
            if self._refusals.add((msg.user_key, name)):
                ctx = CommandContext(msg, name, args, self.services, False)
                await self.commands.audit_refused(ctx, decision.reason)
            if decision.code is not None and self.pairing is not None:
                await self.pairing.announce(msg, decision.code)
            return decision.reply or t.NOT_ALLOWED.format(user_key=msg.user_key)
        rate = await self.rate.check(msg.user_key)
        if not rate.allowed:
            self.metrics.rejected("rate_limited")
            return self._rate_limited(rate)
        if len(msg.text) > MAX_INBOUND_CHARS:
            self.metrics.rejected("too_long")
            return t.TOO_LONG.format(n=len(msg.text), limit=MAX_INBOUND_CHARS)
        ctx = CommandContext(msg, name, args, self.services, self.auth.is_admin(msg.user_key))
        return await self.commands.dispatch(ctx) or t.COMMAND_DONE

    async def _command(self, msg: InboundMessage, name: str, args: str) -> None:
        ctx = CommandContext(msg, name, args, self.services, self.auth.is_admin(msg.user_key))
        reply = await self.commands.dispatch(ctx)
        if reply and not msg.is_direct and self.commands.private(name):
            await self.replies.private(msg, reply)  # a profile or access list is not the group's
        elif reply:
            await self.notice(msg, reply)

    async def notice(self, msg: InboundMessage, text: str, kind: str = "notice") -> None:
        await self.replies.notice(msg, text, kind)

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
        for adapter in self.adapters.values():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(adapter.stop(), max(1.0, deadline - loop.time()))

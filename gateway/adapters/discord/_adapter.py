"""Discord, through discord.py's gateway connection on the gateway's own event loop.

``start()`` logs in (``GET /users/@me``) and runs ``client.connect(reconnect=True)``
in a task; discord.py heartbeats, notices a dead connection (no traffic for
``heartbeat_timeout``), reconnects and RESUMEs the session. Discord replays the
events missed meanwhile; an event seen twice carries the same message id, and the
runner answers a message id once.

``is_connected()`` is live state: the client is open, READY (or RESUMED) since
the last disconnect, its websocket is open and its heartbeats are acknowledged.

Outbound (``_outbound``): ``POST /channels/{id}/messages`` (the first part of a reply in a guild
channel references the message it answers) and ``PATCH`` for streamed edits.
discord.py waits out 429s and retries 5xx answers; a dropped connection is retried
here a bounded number of times with the same ``nonce`` (``enforce_nonce``), so
Discord keeps one message even when the first attempt did arrive.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import discord

from gateway import _texts as t
from gateway.adapters._base import AdapterCapabilities, CommandInfo
from gateway.adapters._support import Backoff, ChatLanes
from gateway.adapters.discord._ask import AskedInteractions
from gateway.adapters.discord._buttons import listen_for_presses
from gateway.adapters.discord._client import (
    GUILD_READY_TIMEOUT,
    HEARTBEAT_TIMEOUT,
    IDENTIFY_DELAY,
    ChorusClient,
    make_client,
    token_of,
)
from gateway.adapters.discord._commands import DEFER_AFTER, NativeCommands, route_webhooks
from gateway.adapters.discord._events import inbound_from
from gateway.adapters.discord._following import FollowedThreads
from gateway.adapters.discord._held import HeldMessages
from gateway.adapters.discord._history import ThreadContext
from gateway.adapters.discord._images import with_fetching, with_images
from gateway.adapters.discord._outbound import DiscordOutbound
from gateway.adapters.discord._permissions import PermissionReport
from gateway.adapters.discord._settings import DiscordSettings
from gateway.clock import Clock, SystemClock
from gateway.errors import ConfigError, InboxError
from gateway.events import (
    InboundMessage,
    OutboundMessage,
    message_from_json,
    message_to_json,
)

logger = logging.getLogger(__name__)

START_WAIT = 10.0
"""Seconds ``start()`` waits for READY before it lets the gateway go on without it."""
FIRST = asyncio.FIRST_COMPLETED
AUTHENTICATION_FAILED = 4004
"""The gateway's close code for a token it does not accept."""
REJECTED = "Discord rejected the bot token ({answer}); check DISCORD_BOT_TOKEN"
LOGIN_BACKOFF = 1.0
MAX_BACKOFF = 60.0
RETRY_DELAY = 0.5


class DiscordAdapter(DiscordOutbound):
    name = "discord"
    prompt_hint = "You are talking on Discord. Discord Markdown works; keep answers compact."
    capabilities = AdapterCapabilities(
        max_text_length=2000,
        edits=True,
        typing=True,
        min_edit_interval=1.0,
        quotes=True,
        max_file_size=10 * 1024 * 1024,  # a server without boosts (25 MB with them)
        voice=True,
    )

    def __init__(
        self,
        settings: DiscordSettings,
        *,
        vision: bool = False,
        start_wait: float = START_WAIT,
        heartbeat_timeout: float = HEARTBEAT_TIMEOUT,
        retry_delay: float = RETRY_DELAY,
        guild_ready_timeout: float = GUILD_READY_TIMEOUT,
        defer_after: float = DEFER_AFTER,
        identify_delay: float = IDENTIFY_DELAY,
        clock: Clock | None = None,
    ) -> None:
        super().__init__()
        try:
            self._token = token_of(settings)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        self._settings = settings
        self._vision = vision
        self._start_wait = start_wait
        self._heartbeat_timeout = heartbeat_timeout
        self._retry_delay = retry_delay
        self._guild_ready_timeout = guild_ready_timeout
        self._defer_after = defer_after
        self._identify_delay = identify_delay
        self._clock = clock or SystemClock()
        self._client: ChorusClient | None = None
        self._commands: NativeCommands | None = None
        self._command_infos: list[CommandInfo] | None = None
        self._logged_in = False
        self._runner: asyncio.Task[None] | None = None
        self._live = asyncio.Event()
        self._lanes = ChatLanes("discord")
        self._threads = ThreadContext()
        self._following = FollowedThreads(settings.follow_threads, self._clock)
        self._report = PermissionReport()
        self._asks = AskedInteractions(self.deliver)
        self._held = HeldMessages(self.record, self._hand_on, self._tell_waiting, self._clock)
        self._started = False
        self._failure: str | None = None

    # ------------------------------------------------------------------ lifecycle

    async def connect(self) -> None:
        if self._started:
            return
        self._started = True
        self._client = make_client(
            self._settings,
            identify_delay=self._identify_delay,
            on_message=self._on_message_event,
            on_state=self._on_state,
            on_retraction=self.retracted,
            heartbeat_timeout=self._heartbeat_timeout,
            guild_ready_timeout=self._guild_ready_timeout,
            counters=self.counters,
        )
        listen_for_presses(self._client, self._pressed)
        self._report.client = self._client
        self._commands = NativeCommands(
            self._client,
            answer=self.answer_command,
            guilds=self._settings.command_guilds,
            defer_after=self._defer_after,
            limit=self.capabilities.max_text_length,
            menus=[self._asks.menu()],
        )
        if self._command_infos is not None:
            self._commands.define(self._command_infos)
        self._runner = asyncio.create_task(self._run(self._client), name="discord-gateway")
        waiting = asyncio.create_task(self._connected())
        # READY, or the runner gave up (a rejected token), or the wait is over
        await asyncio.wait({waiting, self._runner}, timeout=self._start_wait, return_when=FIRST)
        waiting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
        if not self.is_connected() and self._failure is None:
            logger.warning("discord: not connected yet; still trying in the background")

    async def _connected(self) -> None:
        """Until every shard is up (one READY is not all of them with ``discord.shards``)."""
        while not self.is_connected():
            await self._live.wait()
            if not self.is_connected():
                await asyncio.sleep(0.05)

    async def _run(self, client: ChorusClient) -> None:
        route_webhooks(self._settings.api_url)  # interaction answers, from this task's children
        backoff = Backoff(first=LOGIN_BACKOFF, cap=MAX_BACKOFF, sleep=self._clock.sleep)
        while True:
            try:
                await client.login(self._token)
                await client.routed_http.find_gateway()
                break
            except discord.LoginFailure:
                self._failure = REJECTED.format(answer="401 Unauthorized on /users/@me")
                return
            except Exception as exc:
                name = type(exc).__name__
                logger.warning("discord: login failed (%s); retrying in %.1fs", name, backoff.delay)
            await client.http.close()
            await backoff.wait()
        self._logged_in = True
        if self._command_infos is not None:
            await self._sync_commands()
        try:
            await client.connect(reconnect=True)
        except discord.PrivilegedIntentsRequired:
            logger.error("discord: enable the Message Content intent for this bot")
        except discord.ConnectionClosed as exc:
            if exc.code == AUTHENTICATION_FAILED:
                self._failure = REJECTED.format(answer="the gateway closed with 4004")
                return
            logger.error("discord: the gateway closed the connection for good (code %s)", exc.code)
        except Exception:
            logger.exception("discord: the gateway connection failed")
        finally:
            self._live.clear()

    async def publish_commands(
        self, commands: Sequence[CommandInfo], admin_ids: Sequence[str]
    ) -> None:
        """Every command as an application command; registered once the bot is logged in."""
        self._command_infos = list(commands)
        self._report.admins = list(admin_ids)
        if self._commands is not None:
            self._commands.define(self._command_infos)
            if self._logged_in:
                await self._sync_commands()

    async def _sync_commands(self) -> None:
        if self._commands is not None:
            await self._commands.sync_logged()

    def _on_state(self, state: str) -> None:
        if state == "disconnect":
            if self._live.is_set():
                logger.warning("discord: disconnected; reconnecting")
            self._live.clear()
            return
        client = self._client
        me = client.user if client is not None else None
        logger.info("discord %s as %s (%s)", state, me, me.id if me else "?")
        self._live.set()

    async def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        self._live.clear()
        client, runner = self._client, self._runner
        self._client = self._runner = None
        self._commands = None
        self._logged_in = False
        await self._held.close()
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()
        if runner is not None:
            if not runner.done():
                runner.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await runner
        logger.info("discord stopped")

    def failure(self) -> str | None:
        return self._failure

    def mode(self) -> str:
        shards = self._settings.shards
        if shards is None:
            return "gateway"
        ids = self._settings.shard_ids or list(range(shards))
        return f"gateway, shards {', '.join(map(str, ids))} of {shards}"

    def is_connected(self) -> bool:
        """Open, READY since the last disconnect and heartbeats acknowledged, on every
        shard this process runs.

        discord.py itself closes and remakes a connection that is silent for
        ``heartbeat_timeout``; ``on_disconnect`` then clears the live flag.
        """
        client = self._client
        if client is None or not self._live.is_set():
            return False
        if client.is_closed() or not client.is_ready():
            return False
        shards = client.shard_states()
        return bool(shards) and all(shards.values())

    # -------------------------------------------------------------------- inbound

    async def _on_message_event(self, message: discord.Message) -> None:
        client = self._client
        if client is None or client.user is None:
            return
        try:
            read = inbound_from(message, client.user.id)
        except Exception:
            logger.exception("a discord message could not be read")
            return
        if read is not None:  # discord.py runs each event as its own task: the lane keeps order
            payload = message_to_json(read)
            self._lanes.submit(read.chat_id, lambda: self._take(read, message, payload))

    async def _take(self, read: InboundMessage, message: discord.Message, payload: str) -> None:
        """In the chat's lane: recorded (or held while the storage fails), then handed on."""
        try:
            if self._held.waiting:  # behind what waits for the storage: order is kept
                self.counters["unrecorded_deliveries"] += 1
                await self._held.hold(read, message, payload)
                return
            try:
                fresh = await self.record(read.message_id, payload)
            except InboxError as exc:  # Discord sends nothing again: kept until it works
                self.not_recorded(exc)
                await self._held.hold(read, message, payload)
                return
            if fresh:  # not: replayed by Discord after a reconnect, handled once already
                await self._deliver(replace(read, receipts=(read.message_id,)), message)
        except Exception:
            logger.exception("a discord message could not be handled")

    def _hand_on(self, read: InboundMessage, source: object) -> None:
        """A recorded message goes on in its chat's lane."""
        assert isinstance(source, discord.Message)
        inbound = replace(read, receipts=(read.message_id,))
        logger.debug("discord message %s in %s", inbound.message_id, inbound.chat_id)
        self._lanes.submit(inbound.chat_id, lambda: self._deliver(inbound, source))

    async def _tell_waiting(self, chat_id: str) -> None:
        await self.send(OutboundMessage(self.name, chat_id, t.STORAGE_FAULT_WAIT))

    async def _deliver(self, inbound: InboundMessage, source: discord.Message) -> None:
        """In the chat's lane (order kept): thread context and images added, then on."""
        client = self._client
        if client is not None and client.user is not None:
            inbound = await self._following.complete(inbound, source, client.user.id)
            inbound = await self._threads.complete(inbound, source, client.user)
        if self._vision and source.attachments:
            inbound = await with_images(inbound, source, self._settings.api_url)
        if source.attachments:
            inbound = with_fetching(inbound, source, self._settings.api_url)
        await self.deliver(inbound)

    async def read_again(self, payload: str) -> InboundMessage | None:
        """A recorded message (Discord sends nothing again after a restart: it is ours)."""
        return message_from_json(payload)

    async def _pressed(self, interaction: discord.Interaction[Any], command: str) -> None:
        name, _, args = command.removeprefix("/").partition(" ")
        if self._commands is not None:
            await self._commands.respond(interaction, name, args)

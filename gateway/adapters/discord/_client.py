"""The discord.py client chorus runs, pointed at Discord or at another API base URL.

``ChorusClient`` is a ``discord.Client`` whose HTTP client can send its REST calls
to ``discord.api_url`` instead of ``https://discord.com/api/v10``; the gateway
websocket URL is then the one ``GET /gateway/bot`` of that API names. Nothing
global of discord.py is changed, so two clients with different bases can coexist.

Rate limits (429 with ``retry_after``) and 5xx answers are handled by discord.py's
HTTP client: it waits and sends the same request again, a bounded number of times.
The token travels in the ``Authorization`` header, which discord.py never logs.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import discord
from discord.gateway import DiscordWebSocket
from discord.http import HTTPClient, Route
from discord.state import ConnectionState

from gateway.adapters._support import secret_value
from gateway.adapters.discord._retractions import deletion_from, edit_from
from gateway.adapters.discord._settings import DiscordSettings
from gateway.events import Retraction

logger = logging.getLogger(__name__)

HEARTBEAT_TIMEOUT = 60.0
"""Seconds without any gateway traffic before the connection counts as dead and is remade."""
GUILD_READY_TIMEOUT = 2.0
"""Seconds discord.py waits for the guilds announced in READY before ``on_ready``."""
IDENTIFY_DELAY = 5.0
"""Seconds between two IDENTIFYs of one bot (Discord allows one per 5 s per bucket)."""
DEFAULT_BASE = Route.BASE


def token_of(settings: DiscordSettings) -> str:
    return secret_value(settings.token, "discord.token (DISCORD_BOT_TOKEN)")


def intents() -> discord.Intents:
    """Guilds, guild messages, direct messages and message content; nothing else."""
    chosen = discord.Intents.none()
    chosen.guilds = True
    chosen.guild_messages = True
    chosen.dm_messages = True
    chosen.message_content = True
    return chosen


class RoutedHTTPClient(HTTPClient):
    """discord.py's HTTP client with REST calls (and the gateway) on another base URL."""

    def __init__(self, loop: Any, *, api_url: str | None = None) -> None:
        super().__init__(loop)
        self.api_url = api_url.rstrip("/") if api_url else None
        self.gateway_url: str | None = None
        """Set from ``GET /gateway/bot`` when ``api_url`` is: where the websocket goes."""

    async def request(self, route: Route, **kwargs: Any) -> Any:
        if self.api_url and route.url.startswith(DEFAULT_BASE):
            route.url = self.api_url + route.url[len(DEFAULT_BASE) :]
        return await super().request(route, **kwargs)

    async def ws_connect(self, url: str, *, compress: int = 0) -> aiohttp.ClientWebSocketResponse:
        default = str(DiscordWebSocket.DEFAULT_GATEWAY)
        if self.gateway_url and url.startswith(default):
            query = url.partition("?")[2]
            url = self.gateway_url + (f"?{query}" if query else "")
        return await super().ws_connect(url, compress=compress)

    async def find_gateway(self) -> None:
        """With a custom ``api_url``: ask it where the gateway is."""
        if self.api_url:
            _, url, _ = await self.get_bot_gateway()
            self.gateway_url = url


Listener = Callable[[discord.Message], Awaitable[None]]
Notify = Callable[[str], None]


class ChorusClient(discord.Client):
    """A client that reports its connection events and messages to the adapter."""

    def __init__(
        self,
        settings: DiscordSettings,
        *,
        on_message: Listener,
        on_state: Notify,
        heartbeat_timeout: float = HEARTBEAT_TIMEOUT,
        guild_ready_timeout: float = GUILD_READY_TIMEOUT,
        identify_delay: float = IDENTIFY_DELAY,
        counters: Counter[str] | None = None,
        on_retraction: Callable[[Retraction], Awaitable[None]] | None = None,
        **options: Any,
    ) -> None:
        self._api_url = settings.api_url
        self._on_retraction = on_retraction
        self._identify_delay = identify_delay
        self.counters: Counter[str] = counters if counters is not None else Counter()
        """Where skipped events are counted (the adapter's ``counters``)."""
        self._message_listener = on_message
        self._notify = on_state
        super().__init__(
            intents=intents(),
            heartbeat_timeout=heartbeat_timeout,
            guild_ready_timeout=guild_ready_timeout,
            allowed_mentions=discord.AllowedMentions(
                everyone=False, roles=False, users=True, replied_user=True
            ),
            **options,
        )

    def _get_state(self, **options: Any) -> ConnectionState[Any]:
        # discord.Client builds its HTTP client just before its state: swap it here.
        self.http = RoutedHTTPClient(self.loop, api_url=self._api_url)
        state = super()._get_state(**options)
        for event, parser in list(state.parsers.items()):
            state.parsers[event] = self._guarded(event, parser)
        return state

    def _guarded(self, event: str, parser: Callable[[Any], None]) -> Callable[[Any], None]:
        """A gateway event discord.py cannot parse is skipped, not fatal to the connection.

        Unguarded, one malformed event raises out of discord.py's receive loop and
        takes the connection down with it.
        """

        def parse(data: Any) -> None:
            try:
                parser(data)
            except Exception as exc:
                self.counters["skipped_events"] += 1
                logger.warning(
                    "discord: skipped a %s event that could not be read (%s)",
                    event,
                    type(exc).__name__,
                )

        return parse

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        if not initial:
            await asyncio.sleep(self._identify_delay)

    def shard_states(self) -> dict[int, bool]:
        """Each shard this process runs: connected with its heartbeats acknowledged."""
        return {0: not self.is_closed() and math.isfinite(self.latency)}

    @property
    def routed_http(self) -> RoutedHTTPClient:
        assert isinstance(self.http, RoutedHTTPClient)
        return self.http

    async def on_ready(self) -> None:
        self._notify("ready")

    async def on_resumed(self) -> None:
        self._notify("resumed")

    async def on_disconnect(self) -> None:
        self._notify("disconnect")

    async def on_message(self, message: discord.Message) -> None:
        await self._message_listener(message)

    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        if self._on_retraction is not None and self.user is not None:
            retraction = deletion_from(payload, self.user.id)
            if retraction is not None:
                await self._on_retraction(retraction)

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        if self._on_retraction is not None and self.user is not None:
            retraction = edit_from(payload, self.user.id)
            if retraction is not None:
                await self._on_retraction(retraction)


class ChorusShardedClient(ChorusClient, discord.AutoShardedClient):  # type: ignore[misc]
    """``ChorusClient`` over several gateway connections (``discord.shards``).

    ``discord.shard_ids`` picks the shards this process runs, so several processes
    can split one bot; Discord routes a guild's events to shard
    ``(guild_id >> 22) % shards`` and direct messages to shard 0.
    """

    def shard_states(self) -> dict[int, bool]:
        return {
            shard_id: not info.is_closed() and math.isfinite(info.latency)
            for shard_id, info in self.shards.items()
        }

    async def on_shard_ready(self, shard_id: int) -> None:
        # A shard that had to IDENTIFY again is READY alone: no client-wide on_ready.
        self._notify(f"ready (shard {shard_id})")

    async def on_shard_resumed(self, shard_id: int) -> None:
        self._notify(f"resumed (shard {shard_id})")


def make_client(settings: DiscordSettings, **options: Any) -> ChorusClient:
    """A plain client, or a sharded one when ``discord.shards`` is set."""
    # chorus joins no voice channel: discord.py's warnings that voice libraries are
    # missing (PyNaCl, davey) would be a WARNING on every normal start
    discord.VoiceClient.warn_nacl = False
    discord.VoiceClient.warn_dave = False
    if settings.shards is None:
        return ChorusClient(settings, **options)
    return ChorusShardedClient(
        settings, shard_count=settings.shards, shard_ids=settings.shard_ids or None, **options
    )


async def describe_bot(settings: DiscordSettings) -> tuple[bool, str]:
    """For ``chorus doctor``: (ok, which bot the token belongs to, or what is wrong)."""
    try:
        token = token_of(settings)
    except ValueError as exc:
        return False, str(exc)
    http = RoutedHTTPClient(asyncio.get_running_loop(), api_url=settings.api_url)
    try:
        me = await http.static_login(token)
    except discord.LoginFailure:
        return False, "Discord rejected the bot token (check DISCORD_BOT_TOKEN)"
    except discord.HTTPException as exc:
        return False, f"GET /users/@me failed: HTTP {exc.status}"
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        where = settings.api_url or DEFAULT_BASE
        return False, f"cannot reach the Discord API at {where} ({type(exc).__name__})"
    finally:
        await http.close()
    name = me.get("username", "")
    return True, f"connected as {name} ({me.get('id', '')})"

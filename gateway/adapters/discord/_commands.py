"""chorus commands as Discord application (slash) commands, answered privately.

Each registry command becomes an application command of the same name in a
discord.py ``CommandTree``; a command with subcommands (``/admin``) has them as
Discord subcommands with their options and choices (``_subcommands``); another
command that takes arguments has one optional text option, ``args``
(``/forget args:all``). Admin commands carry
``default_member_permissions`` (Manage Server), so Discord hides them from
members without it; chorus still checks every caller itself.

An interaction reaches the runner as the typed command would (``/admin
sessions``) on the session of the channel (or thread) it was run in. The answer
is ephemeral: when it is ready within ``defer_after`` seconds it is the
interaction's response; otherwise the interaction is deferred first (Discord
gives three seconds) and the original response is edited once the answer is
there. Long answers go on in ephemeral follow-ups.

Interaction callbacks and webhooks do not pass through the bot's HTTP client: a
``RoutedWebhookAdapter`` (discord.py's ``async_context``) sends them to
``discord.api_url`` too.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import aiohttp
import discord
from discord import app_commands
from discord.http import Route
from discord.webhook.async_ import AsyncWebhookAdapter, async_context

from gateway.adapters._base import CommandInfo
from gateway.adapters._text_split import split_text
from gateway.adapters.discord._errors import platform_errors
from gateway.adapters.discord._events import PLATFORM
from gateway.adapters.discord._subcommands import fits, group_of
from gateway.errors import ChatForbidden
from gateway.events import InboundMessage

logger = logging.getLogger(__name__)

DEFER_AFTER = 2.0
"""Seconds an answer may take before the interaction is deferred (Discord allows 3)."""
COMMAND_PARTS = 5
"""Messages one command answer may take (the response and four follow-ups)."""
MAX_DESCRIPTION = 100
ADMIN_PERMISSIONS = discord.Permissions(manage_guild=True)

Answer = Callable[[InboundMessage], Awaitable[str]]


class RoutedWebhookAdapter(AsyncWebhookAdapter):
    """discord.py's webhook adapter with Discord's base URL replaced by ``api_url``."""

    def __init__(self, api_url: str) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.api_url = api_url.rstrip("/")

    async def request(self, route: Route, session: aiohttp.ClientSession, **kwargs: Any) -> Any:
        if route.url.startswith(Route.BASE):
            route.url = self.api_url + route.url[len(Route.BASE) :]
        return await super().request(route, session, **kwargs)


def route_webhooks(api_url: str | None) -> None:
    """From now on, in this context (and tasks it starts), answer interactions at ``api_url``."""
    if api_url:
        async_context.set(RoutedWebhookAdapter(api_url))


def _description(text: str, fallback: str) -> str:
    text = " ".join(text.split()) or fallback
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1] + "…"


def interaction_message(
    interaction: discord.Interaction[Any], name: str, args: str
) -> InboundMessage:
    """The interaction as the command a person would have typed in that channel."""
    channel = interaction.channel
    channel_id = interaction.channel_id or (channel.id if channel is not None else 0)
    direct = interaction.guild_id is None
    thread = str(channel_id) if isinstance(channel, discord.Thread) else None
    text = f"/{name} {args.strip()}".strip()
    return InboundMessage(
        platform=PLATFORM,
        chat_id=str(channel_id),
        user_id=str(interaction.user.id),
        text=text,
        message_id=f"interaction:{interaction.id}",
        user_name=interaction.user.display_name,
        thread_id=thread,
        is_direct=direct,
        mentions_bot=not direct,
    )


class NativeCommands:
    """The tree of chorus's application commands and how their interactions are answered."""

    def __init__(
        self,
        client: discord.Client,
        *,
        answer: Answer,
        guilds: Sequence[int] = (),
        defer_after: float = DEFER_AFTER,
        limit: int = 2000,
        menus: Sequence[app_commands.ContextMenu] = (),
    ) -> None:
        self.tree: app_commands.CommandTree[Any] = app_commands.CommandTree(client)
        self.tree.on_error = self._on_error  # type: ignore[method-assign]
        self._answer = answer
        self._guilds = [discord.Object(id=g) for g in guilds]
        self._defer_after = defer_after
        self._limit = limit
        self._names: list[str] = []
        self._menus = list(menus)

    def define(self, commands: Sequence[CommandInfo]) -> None:
        """Put ``commands`` in the tree (replacing what was there)."""
        self.tree.clear_commands(guild=None)
        for info in commands:
            self.tree.add_command(self._command(info))
        for menu in self._menus:
            self.tree.add_command(menu)
        self._names = [info.name for info in commands]

    @property
    def names(self) -> list[str]:
        return list(self._names)

    async def sync(self) -> None:
        """Register the tree with Discord: globally, or to each of ``command_guilds``."""
        if not self._guilds:
            synced = await self.tree.sync()
            logger.info("discord: %d application commands registered", len(synced))
            return
        for guild in self._guilds:
            self.tree.copy_global_to(guild=guild)
            synced = await self.tree.sync(guild=guild)
            logger.info("discord: %d application commands in guild %s", len(synced), guild.id)

    async def sync_logged(self) -> None:
        """``sync``; a refusal or a failure is logged, not raised."""
        try:
            with platform_errors():
                await self.sync()
        except ChatForbidden:
            logger.error(
                "discord: registering slash commands was refused; invite the bot with the "
                "applications.commands scope (and check discord.command_guilds)"
            )
        except Exception as exc:
            logger.warning("discord: registering slash commands failed (%s)", type(exc).__name__)

    def _command(
        self, info: CommandInfo
    ) -> app_commands.Command[Any, Any, None] | app_commands.Group:
        name = info.name
        if fits(info):
            group = group_of(info, self.respond)
            if info.admin_only:
                group.default_permissions = ADMIN_PERMISSIONS
            return group

        async def with_args(interaction: discord.Interaction[Any], args: str | None = None) -> None:
            await self.respond(interaction, name, args or "")

        async def without_args(interaction: discord.Interaction[Any]) -> None:
            await self.respond(interaction, name, "")

        callback: Any = without_args
        if info.args:
            callback = app_commands.describe(args=_description(info.args, "arguments"))(with_args)
        command: app_commands.Command[Any, Any, None] = app_commands.Command(
            name=name, description=_description(info.description, name), callback=callback
        )
        if info.admin_only:
            command.default_permissions = ADMIN_PERMISSIONS
        return command

    async def respond(self, interaction: discord.Interaction[Any], name: str, args: str) -> None:
        """Run the command and show its answer to the caller alone."""
        message = interaction_message(interaction, name, args)
        work = asyncio.ensure_future(self._answer(message))
        deferred = False
        try:
            await asyncio.wait_for(asyncio.shield(work), timeout=self._defer_after)
        except TimeoutError:
            await interaction.response.defer(ephemeral=True, thinking=True)
            deferred = True
        text = await work
        parts = split_text(text, self._limit)[:COMMAND_PARTS] or ["…"]
        if deferred:
            await interaction.edit_original_response(content=parts[0])
        else:
            await interaction.response.send_message(parts[0], ephemeral=True)
        for part in parts[1:]:
            await interaction.followup.send(part, ephemeral=True)

    async def _on_error(
        self, interaction: discord.Interaction[Any], error: app_commands.AppCommandError
    ) -> None:
        original = getattr(error, "original", error)
        logger.warning(
            "discord: answering /%s failed (%s)",
            interaction.command.name if interaction.command else "?",
            type(original).__name__,
        )

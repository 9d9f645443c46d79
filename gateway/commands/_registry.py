"""One slash-command registry for every platform.

A command is admin-only unless it says otherwise (deny by default), and the
check happens in ``dispatch`` — the one path every command takes, built-in,
configured or added by a plugin, typed or native. Every admin command and
every refusal is audited.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from gateway.command_menu import MenuSubcommand
from gateway.commands._services import CommandServices
from gateway.commands._texts import COMMAND_FAILED, REFUSED, UNKNOWN_COMMAND
from gateway.events import InboundMessage
from memory.paths import UserKey

logger = logging.getLogger(__name__)

AUDIT_ARGS_MAX = 500
"""Characters of a command's arguments kept in the audit table."""


@dataclass
class CommandContext:
    msg: InboundMessage
    name: str
    args: str
    services: CommandServices
    is_admin: bool

    @property
    def user_key(self) -> UserKey:
        return self.msg.user_key


Handler = Callable[[CommandContext], Awaitable[str | None]]
Redactor = Callable[[str], str]
"""Turns a command's arguments into what the audit table may keep."""


def _keep(args: str) -> str:
    return args


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    handler: Handler
    aliases: tuple[str, ...] = ()
    admin_only: bool = True
    audit_args: Redactor = _keep
    """What of the arguments reaches the audit table (never a pairing code)."""
    args: str = ""
    """What the command takes after its name, for command pickers ("" for nothing)."""
    shown_on: frozenset[str] | None = None
    """The platforms whose command menu and ``/help`` list it (None: every platform);
    it works on every platform either way."""
    to_strangers: str = ""
    """What it says, before the reason, to someone who may not use the bot (yet); only
    for a command that reads nothing of anyone's ("" for nothing)."""
    private: bool = False
    """Its answer is for its caller alone (a profile, an access list): typed in a group, it
    is shown to them privately, never to the group."""
    in_groups: bool = True
    """Whether it has a use in a group chat, so group command menus list it."""
    subcommands: tuple[MenuSubcommand, ...] = ()
    """Its subcommands and their arguments, for structured pickers (``/admin``)."""


def parse_command(text: str, bot_username: str | None = None) -> tuple[str, str] | None:
    """``/name@bot args`` → ``("name", "args")``; None for non-commands or other bots' ones."""
    stripped = text.strip()
    if not stripped.startswith("/") or len(stripped) < 2:
        return None
    head, _, args = stripped[1:].partition(" ")
    name, _, target = head.partition("@")
    if target and bot_username and target.lower() != bot_username.lower():
        return None
    if not name or not all(ch.isalnum() or ch in "_-" for ch in name):
        return None
    return name.lower(), args.strip()


class CommandRegistry:
    def __init__(self) -> None:
        self._commands: dict[str, Command] = {}
        self._names: dict[str, str] = {}

    def register(self, command: Command) -> None:
        for name in (command.name, *command.aliases):
            if name in self._names:
                raise ValueError(f"command /{name} is already registered")
        self._commands[command.name] = command
        for name in (command.name, *command.aliases):
            self._names[name] = command.name

    def get(self, name: str) -> Command | None:
        canonical = self._names.get(name)
        return self._commands[canonical] if canonical else None

    def visible(self, is_admin: bool, platform: str | None = None) -> list[Command]:
        """The commands to list for an admin or not, on ``platform`` (None: on any)."""
        return [
            c
            for c in self._commands.values()
            if (is_admin or not c.admin_only)
            and (platform is None or c.shown_on is None or platform in c.shown_on)
        ]

    def private(self, name: str) -> bool:
        """Whether ``/name``'s answer is for its caller alone."""
        command = self.get(name)
        return command is not None and command.private

    def to_strangers(self, name: str) -> str:
        """What ``/name`` says to someone the bot does not answer ("" for nothing)."""
        command = self.get(name)
        return command.to_strangers if command is not None else ""

    async def dispatch(self, ctx: CommandContext) -> str | None:
        """Run a command after the admin check; refusals and admin commands are audited."""
        command = self.get(ctx.name)
        services = ctx.services
        if command is None:
            return UNKNOWN_COMMAND.format(name=ctx.name)
        if command.admin_only and not ctx.is_admin:
            await self._audit(ctx, command, "refused")
            services.count(command.name, "refused")
            logger.warning("refused admin command /%s for %s", command.name, ctx.user_key)
            return REFUSED
        try:
            reply = await command.handler(ctx)
        except Exception:
            logger.exception("command /%s failed", command.name)
            if command.admin_only:
                await self._audit(ctx, command, "error")
            services.count(command.name, "error")
            return COMMAND_FAILED.format(name=command.name)
        # a reply may say how it went and whom it concerned (``AdminReply``)
        outcome = str(getattr(reply, "outcome", "ok"))
        if command.admin_only:
            await self._audit(ctx, command, outcome, getattr(reply, "subject", None))
        services.count(command.name, outcome)
        return reply

    async def audit_refused(self, ctx: CommandContext, reason: str) -> None:
        """Audit an admin command from someone who may not use the bot at all."""
        command = self.get(ctx.name)
        if command is not None and command.admin_only:
            await self._audit(ctx, command, f"refused:{reason}")
            ctx.services.count(command.name, "refused")

    @staticmethod
    async def _audit(
        ctx: CommandContext, command: Command, outcome: str, subject: object = None
    ) -> None:
        args = command.audit_args(ctx.args)
        if subject and str(subject) not in args:
            args = f"{args} → {subject}"
        await ctx.services.audit(str(ctx.user_key), f"/{ctx.name}", args[:AUDIT_ARGS_MAX], outcome)

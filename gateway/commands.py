"""One slash-command registry for every platform.

A command is admin-only unless it says otherwise (deny by default), and the
check happens in ``dispatch`` — the one path every command takes, built-in,
configured or added by a plugin.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.events import InboundMessage

if TYPE_CHECKING:
    from gateway.runner import GatewayRunner

logger = logging.getLogger(__name__)

REFUSED = "That command is for admins only."


@dataclass
class CommandContext:
    msg: InboundMessage
    name: str
    args: str
    runner: GatewayRunner
    is_admin: bool

    @property
    def user_key(self) -> str:
        return self.msg.user_key


Handler = Callable[[CommandContext], Awaitable[str | None]]


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    handler: Handler
    aliases: tuple[str, ...] = ()
    admin_only: bool = True


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

    def visible(self, is_admin: bool) -> list[Command]:
        return [c for c in self._commands.values() if is_admin or not c.admin_only]

    async def dispatch(self, ctx: CommandContext) -> str | None:
        """Run a command after the admin check; refusals and admin commands are audited."""
        command = self.get(ctx.name)
        if command is None:
            return f"Unknown command /{ctx.name}. Send /help for the list."
        runner = ctx.runner
        if command.admin_only and not ctx.is_admin:
            await runner.audit(ctx, "refused")
            runner.metrics.command(command.name, "refused")
            logger.warning("refused admin command /%s for %s", command.name, ctx.user_key)
            return REFUSED
        try:
            reply = await command.handler(ctx)
        except Exception:
            logger.exception("command /%s failed", command.name)
            if command.admin_only:
                await runner.audit(ctx, "error")
            runner.metrics.command(command.name, "error")
            return f"Sorry, /{command.name} failed. The error is in the logs."
        if command.admin_only:
            await runner.audit(ctx, "ok")
        runner.metrics.command(command.name, "ok")
        return reply

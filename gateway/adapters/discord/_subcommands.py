"""A command with subcommands (``/admin``) as a Discord application command group.

Each subcommand is an option of type 1 (SUB_COMMAND) with its own options: a text
option each, with Discord's ``choices`` where the argument takes a fixed set of
values (``/admin queue action:retry-failed``), required ones first as Discord
wants them. Run from the picker, a subcommand is answered as the typed command
would be: its values are put back into the text a person types
(``/admin budget discord:1 tokens_per_day=5``), so one handler reads both.

Discord takes at most 25 subcommands and 25 choices per option; a command with more
subcommands keeps the one free-text ``args`` option instead.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import discord
from discord import app_commands

from gateway.adapters._base import CommandInfo
from gateway.command_menu import MenuOption, MenuSubcommand, subcommand_args

__all__ = ["MAX_SUBCOMMANDS", "fits", "group_of"]

MAX_SUBCOMMANDS = 25
"""Discord's limit on the subcommands of one command (and choices of one option)."""
MAX_DESCRIPTION = 100

Respond = Callable[[discord.Interaction[Any], str, str], Awaitable[None]]
"""Answers ``/name args`` run by the interaction (``NativeCommands.respond``)."""


def _short(text: str, fallback: str) -> str:
    text = " ".join(text.split()) or fallback
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1] + "…"


def fits(info: CommandInfo) -> bool:
    """Whether Discord can show ``info``'s subcommands as such."""
    subs = info.subcommands
    return (
        0 < len(subs) <= MAX_SUBCOMMANDS
        and all(len(o.choices) <= MAX_SUBCOMMANDS for s in subs for o in s.options)
        and len({s.name for s in subs}) == len(subs)
    )


def group_of(info: CommandInfo, respond: Respond) -> app_commands.Group:
    """``info`` as a group of subcommands (check ``fits`` first)."""
    group = app_commands.Group(name=info.name, description=_short(info.description, info.name))
    for sub in info.subcommands:
        group.add_command(_subcommand(info.name, sub, respond))
    return group


def _subcommand(
    command: str, sub: MenuSubcommand, respond: Respond
) -> app_commands.Command[Any, Any, None]:
    async def callback(interaction: discord.Interaction[Any], **values: str | None) -> None:
        await respond(interaction, command, subcommand_args(sub, values))

    ordered = sorted(sub.options, key=lambda o: not o.required)  # required ones first
    first = inspect.Parameter(
        "interaction", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=discord.Interaction
    )
    callback.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [first, *(_parameter(o) for o in ordered)]
    )
    described: Any = callback
    described.__discord_app_commands_param_description__ = {
        o.name: _short(o.description, o.name) for o in ordered
    }
    described.__discord_app_commands_param_choices__ = {
        o.name: [app_commands.Choice(name=c, value=c) for c in o.choices]
        for o in ordered
        if o.choices
    }
    return app_commands.Command(
        name=sub.name, description=_short(sub.description, sub.name), callback=described
    )


def _parameter(option: MenuOption) -> inspect.Parameter:
    default = inspect.Parameter.empty if option.required else None
    return inspect.Parameter(
        option.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=str
    )

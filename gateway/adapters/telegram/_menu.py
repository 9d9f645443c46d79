"""The bot's command menu per scope, and its description, as Telegram shows them.

Private chats list the commands everyone may use (``BotCommandScopeAllPrivateChats``),
group chats only those with a use in a group (``BotCommandScopeAllGroupChats``), and
each admin's private chat every command, admin ones too (``BotCommandScopeChat`` with
the admin's user id, which is their private chat's id). The description (the empty
chat's "What can this bot do?") and short description (the profile and shared links)
are set from ``telegram.description`` / ``telegram.short_description`` when given.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from telegram import (
    Bot,
    BotCommand,
    BotCommandScope,
    BotCommandScopeAllGroupChats,
    BotCommandScopeAllPrivateChats,
    BotCommandScopeChat,
)

from gateway.adapters._base import CommandInfo
from gateway.adapters.telegram._errors import platform_errors
from gateway.adapters.telegram._settings import TelegramSettings
from gateway.errors import AdapterError

logger = logging.getLogger(__name__)

_COMMAND_NAME = re.compile(r"[a-z0-9_]{1,32}")
DESCRIPTION_MAX = 256
"""Characters of a command's description Telegram keeps."""


def _menu(commands: Sequence[CommandInfo]) -> list[BotCommand]:
    return [BotCommand(c.name, c.description[:DESCRIPTION_MAX]) for c in commands]


async def _set(bot: Bot, commands: list[BotCommand], scope: BotCommandScope, what: str) -> bool:
    try:
        with platform_errors():
            await bot.set_my_commands(commands, scope=scope)
    except AdapterError as exc:
        logger.warning("telegram: publishing %s commands failed (%s)", what, type(exc).__name__)
        return False
    return True


async def publish_menus(
    bot: Bot, commands: Sequence[CommandInfo], admin_ids: Sequence[str]
) -> None:
    """Set the private chats', the groups' and each admin's command menu."""
    listed = [c for c in commands if _COMMAND_NAME.fullmatch(c.name)]
    everyone = [c for c in listed if not c.admin_only]
    await _set(bot, _menu(everyone), BotCommandScopeAllPrivateChats(), "private chats'")
    groups = [c for c in everyone if c.in_groups]
    await _set(bot, _menu(groups), BotCommandScopeAllGroupChats(), "groups'")
    if len(listed) == len(everyone):
        return
    for admin in admin_ids:
        if not admin.lstrip("-").isdigit():
            continue
        try:
            with platform_errors():
                await bot.set_my_commands(_menu(listed), scope=BotCommandScopeChat(int(admin)))
        except AdapterError as exc:
            # usually: this admin has not started a chat with the bot yet
            logger.info(
                "telegram: admin commands for %s not published (%s)", admin, type(exc).__name__
            )


async def publish_descriptions(bot: Bot, settings: TelegramSettings) -> None:
    """``setMyDescription`` / ``setMyShortDescription`` for the ones configured."""
    try:
        with platform_errors():
            if settings.description is not None:
                await bot.set_my_description(settings.description)
            if settings.short_description is not None:
                await bot.set_my_short_description(settings.short_description)
    except AdapterError as exc:
        logger.warning("telegram: setting the bot's description failed (%s)", type(exc).__name__)

"""A channel where the bot lacks a permission it needs to post, told to an admin once.

Discord refuses such a post with 403 Missing Permissions (code 50013). The refusal
itself is logged calmly where every platform's refusals are (``Walls``: one WARNING
per channel per hour); here the first refusal in a channel also gets one direct
message to an admin (the first of ``auth.admins`` on Discord that takes it), naming
the channel and the permissions the bot lacks there. Those are read from what
Discord told the bot about the server (its role permissions and the channel's
overwrites); when that is not known, the one a post always needs is named.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import discord

from gateway.adapters._support import SeenSet
from gateway.adapters.discord._errors import platform_errors
from gateway.errors import AdapterError, ChatForbidden

__all__ = ["MISSING_PERMISSIONS", "PermissionReport"]

logger = logging.getLogger(__name__)

MISSING_PERMISSIONS = 50013
"""Discord's JSON error code for a permission the bot lacks."""
CHANNELS_REMEMBERED = 10_000
TOLD = (
    "I cannot post in {where}: I lack the {missing} permission there. Give my role "
    "{that} in the channel's settings (Edit Channel → Permissions) or the server's "
    "roles. I tell you this once per channel."
)


def _label(flag: str) -> str:
    """``send_messages_in_threads`` → ``Send Messages in Threads``."""
    words = [w if w in ("in", "of") else w.title() for w in flag.split("_")]
    return " ".join(words)


class PermissionReport:
    """Watches the bot's posts for 50013 and tells an admin about each channel once."""

    def __init__(self) -> None:
        self.client: discord.Client | None = None
        """The connected client (set when it is made)."""
        self.admins: Sequence[str] = ()
        """Discord user ids of the admins, in the order ``auth.admins`` names them."""
        self._told = SeenSet(CHANNELS_REMEMBERED)
        self._tasks: set[asyncio.Task[None]] = set()

    @contextmanager
    def watching(self, chat_id: str, *, reply: bool = False, files: bool = False) -> Iterator[None]:
        """Around a post into ``chat_id`` (a reply to a message, with files): a refusal
        for a missing permission is reported; the error goes on as it was."""
        try:
            yield
        except ChatForbidden as exc:
            cause = exc.__cause__
            if isinstance(cause, discord.Forbidden) and cause.code == MISSING_PERMISSIONS:
                self.refused(chat_id, reply=reply, files=files)
            raise

    def refused(self, chat_id: str, *, reply: bool = False, files: bool = False) -> None:
        """The bot may not post in ``chat_id``: the first time, an admin is told."""
        if not self._told.add(chat_id):
            return
        task = asyncio.create_task(self._tell(chat_id, self.missing(chat_id, reply, files)))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def missing(self, chat_id: str, reply: bool = False, files: bool = False) -> list[str]:
        """What the bot lacks to post in ``chat_id``, as Discord names the permissions."""
        channel = self._channel(chat_id)
        in_thread = isinstance(channel, discord.Thread)
        send = "send_messages_in_threads" if in_thread else "send_messages"
        needed = ["view_channel", send]
        needed += ["read_message_history"] if reply else []
        needed += ["attach_files"] if files else []
        guild = getattr(channel, "guild", None)
        me = guild.me if isinstance(guild, discord.Guild) else None
        if isinstance(channel, discord.abc.GuildChannel | discord.Thread) and me is not None:
            have = channel.permissions_for(me)
            lacking = [_label(flag) for flag in needed if not getattr(have, flag)]
            if lacking:
                return lacking
        return [_label(send)]

    def _channel(self, chat_id: str) -> object:
        client = self.client
        return client.get_channel(int(chat_id)) if client and chat_id.isdigit() else None

    def _where(self, chat_id: str) -> str:
        channel = self._channel(chat_id)
        if isinstance(channel, discord.Thread):
            parent = f" in #{channel.parent.name}" if channel.parent is not None else ""
            return f"the thread “{channel.name}”{parent} ({channel.guild.name}, id {chat_id})"
        if isinstance(channel, discord.abc.GuildChannel):
            return f"#{channel.name} ({channel.guild.name}, id {chat_id})"
        return f"the channel with id {chat_id}"

    async def _tell(self, chat_id: str, missing: list[str]) -> None:
        names = " and ".join(missing)
        that = "that permission" if len(missing) == 1 else "those permissions"
        text = TOLD.format(where=self._where(chat_id), missing=names, that=that)
        client = self.client
        for admin in self.admins:
            if client is None or not admin.isdigit():
                continue
            try:
                with platform_errors():
                    dm = await client.http.start_private_message(int(admin))
                    await client.get_partial_messageable(int(dm["id"])).send(text)
            except AdapterError as exc:
                logger.info("discord: admin %s was not told by DM (%s)", admin, exc)
                continue
            logger.info("discord: told admin %s that channel %s lacks %s", admin, chat_id, names)
            return
        logger.warning(
            "discord: the bot lacks %s in channel %s and no admin could be told by DM",
            names,
            chat_id,
        )

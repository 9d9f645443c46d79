"""Discord's MESSAGE_DELETE and MESSAGE_UPDATE events as retractions.

discord.py gives them as ``on_raw_message_delete`` (``RawMessageDeleteEvent``:
``message_id``, ``channel_id``, ``guild_id``, the message when it is in its cache)
and ``on_raw_message_edit`` (``RawMessageUpdateEvent``: the same ids and ``data``,
the message object Discord sent, with ``author`` and ``content``). MESSAGE_DELETE
does not say who deleted the message: when discord.py has the message cached, a
bot's message is ignored; otherwise the deletion is the message's (the transcript
holds only people's messages). An update without ``content`` (an embed unfurled)
or by a bot is not an edit of a person's words.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import discord

from gateway.adapters.discord._events import mention_pattern
from gateway.events import Retraction

__all__ = ["deletion_from", "edit_from"]

PLATFORM = "discord"


def deletion_from(event: discord.RawMessageDeleteEvent, bot_id: int) -> Retraction | None:
    """The deletion ``event`` tells of, or None when it is not of a person's message."""
    cached = event.cached_message
    author = ""
    if cached is not None:
        if cached.author.bot or cached.author.id == bot_id:
            return None
        author = str(cached.author.id)
    return Retraction(PLATFORM, str(event.channel_id), author, str(event.message_id))


def edit_from(event: discord.RawMessageUpdateEvent, bot_id: int) -> Retraction | None:
    """The edit ``event`` tells of, or None when it is not a person's new words."""
    data: Mapping[str, Any] = event.data
    author = data.get("author")
    content = data.get("content")
    if not isinstance(author, Mapping) or not isinstance(content, str):
        return None
    if author.get("bot") or str(author.get("id")) == str(bot_id):
        return None
    cached = event.cached_message
    if cached is not None and cached.content == content:
        return None  # an embed or a pin changed the message, not its words
    text = mention_pattern(bot_id).sub("", content).strip()
    return Retraction(
        PLATFORM, str(event.channel_id), str(author.get("id")), str(event.message_id), text
    )

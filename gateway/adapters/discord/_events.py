"""Discord messages as chorus messages.

- A message in a DM channel is a direct message.
- In a guild channel the bot is addressed when it is mentioned (``<@id>`` or
  ``<@!id>``, removed from the text) or when the message replies to one of its
  messages. A message in a thread keeps the thread as its chat (replies go into
  the thread) and names it as its ``thread_id``.
- Messages from bots (ours included) and system messages are ignored; edits never
  reach ``on_message``.
- In a guild channel, a message starting with "/" that neither mentions nor
  replies to the bot is not for chorus ("/tmp is full", another bot's command):
  it is ignored. chorus's commands there are application commands; in a DM,
  typed commands work as everywhere.
- A voice message (an audio attachment with a waveform) is a ``voice`` attachment,
  with its length; a file of no known media type is a ``document``, read by name.
- The message it replies to (``message_reference``, resolved by Discord) comes with it
  as context when it is of the same channel (``gateway.adapters._replied``).
"""

from __future__ import annotations

import re

import discord

from gateway.adapters._replied import Writer, with_replied
from gateway.events import Attachment, AttachmentKind, InboundMessage

PLATFORM = "discord"
ANSWERED_TYPES = frozenset({discord.MessageType.default, discord.MessageType.reply})
_KINDS: tuple[tuple[str, AttachmentKind], ...] = (
    ("image/", "image"),
    ("audio/", "audio"),
    ("video/", "video"),
)


def mention_pattern(bot_id: int) -> re.Pattern[str]:
    """``<@id>`` or ``<@!id>`` and the blank after it."""
    return re.compile(rf"<@!?{bot_id}>[ \t]?")


def is_direct(message: discord.Message) -> bool:
    channel = message.channel
    if isinstance(channel, discord.DMChannel | discord.GroupChannel):
        return True
    return message.guild is None and getattr(channel, "guild_id", None) is None


def replies_to(message: discord.Message, bot_id: int) -> bool:
    reference = message.reference
    if reference is None:
        return False
    resolved = reference.resolved
    return isinstance(resolved, discord.Message) and resolved.author.id == bot_id


def inbound_from(message: discord.Message, bot_id: int) -> InboundMessage | None:
    """The message as chorus sees it, or None when chorus should not look at it."""
    author = message.author
    if author.bot or author.id == bot_id or message.type not in ANSWERED_TYPES:
        return None
    direct = is_direct(message)
    mention = mention_pattern(bot_id)
    mentioned = mention.search(message.content) is not None or any(
        user.id == bot_id for user in message.mentions
    )
    text = mention.sub("", message.content).strip()
    replied = replies_to(message, bot_id)
    if not direct and not mentioned and not replied and text.startswith("/"):
        return None
    channel = message.channel
    thread = str(channel.id) if isinstance(channel, discord.Thread) else None
    inbound = InboundMessage(
        platform=PLATFORM,
        chat_id=str(channel.id),
        user_id=str(author.id),
        text=text,
        message_id=str(message.id),
        user_name=author.display_name,
        thread_id=thread,
        attachments=tuple(_attachment(a) for a in message.attachments),
        is_direct=direct,
        mentions_bot=mentioned and not direct,
        reply_to_bot=replied and not direct,
    )
    return _with_reply(inbound, message, bot_id)


def _with_reply(inbound: InboundMessage, message: discord.Message, bot_id: int) -> InboundMessage:
    """``inbound`` with the message it replies to, when Discord resolved one of this channel."""
    reference = message.reference
    resolved = reference.resolved if reference is not None else None
    if reference is None or not isinstance(resolved, discord.Message):
        return inbound
    if reference.channel_id != message.channel.id or resolved.channel.id != message.channel.id:
        return inbound  # a forward or a cross-post: another room's words stay there
    who = resolved.author
    writer: Writer = "other"
    if who.id in (bot_id, message.author.id):
        writer = "bot" if who.id == bot_id else "sender"
    return with_replied(inbound, writer, who.display_name, resolved.content)


def _attachment(attachment: discord.Attachment) -> Attachment:
    mime = attachment.content_type or ""
    kind: AttachmentKind = "document"
    for prefix, candidate in _KINDS:
        if mime.startswith(prefix):
            kind = candidate
    if kind == "audio" and attachment.is_voice_message():
        kind = "voice"
    duration = attachment.duration if kind in ("voice", "audio") else None
    return Attachment(kind, attachment.filename, mime, attachment.size, duration=duration)

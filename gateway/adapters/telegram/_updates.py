"""Telegram updates as ``InboundMessage``s: who, where, addressed how, carrying what.

- Only new messages count: edited messages, channel posts and service messages
  (members joining, pins, …) give ``None``; so do messages from bots.
- Forum topics become ``thread_id``; the implicit reply to a topic's first
  message is not a reply to the bot.
- ``/cmd@thisbot args`` arrives as ``/cmd args`` and mentions the bot (in a group
  it is addressed to it, known command or not); ``/cmd@otherbot`` is not ours.
- A leading ``@thisbot`` is dropped from the text (it is what ``mentions_bot`` says).
- A forwarded message's text is someone else's words: it comes as ``quoted``
  (``forwarded``, with its origin's name), never as the sender's text or a command.
- The message it replies to (``reply_to_message``, always of the same chat) comes
  with it as context (``gateway.adapters._replied``).
- Voice notes, audio files and documents can be downloaded when they are read
  (``Attachment.fetch``, set by the adapter); their length is ``duration``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import timedelta

from telegram import (
    Message,
    MessageEntity,
    MessageOriginChannel,
    MessageOriginChat,
    MessageOriginHiddenUser,
    MessageOriginUser,
    PhotoSize,
    Update,
    User,
)
from telegram.constants import ChatType

from gateway.adapters._replied import with_replied
from gateway.adapters._support import MAX_IMAGE_BYTES
from gateway.events import Attachment, AttachmentKind, InboundMessage, Quoted

PLATFORM = "telegram"

_COMMAND = re.compile(r"/([A-Za-z0-9_]+)@([A-Za-z0-9_]+)(?=\s|$)")
_LEADING_PUNCTUATION = " \t\n,:;"

_MEDIA: tuple[tuple[str, AttachmentKind], ...] = (
    ("photo", "image"),
    ("voice", "voice"),
    ("audio", "audio"),
    ("video", "video"),
    ("video_note", "video"),
    ("animation", "video"),
    ("document", "document"),
    ("sticker", "sticker"),
    ("location", "other"),
    ("venue", "other"),
    ("contact", "other"),
    ("poll", "other"),
    ("dice", "other"),
    ("game", "other"),
    ("story", "other"),
    ("paid_media", "other"),
)


@dataclass(frozen=True, slots=True)
class BotIdentity:
    """This bot, from ``getMe``."""

    id: int
    username: str


def inbound_from(update: Update, me: BotIdentity) -> InboundMessage | None:
    """The message a person sent, or ``None`` for anything chorus does not answer."""
    message = update.message
    user = message.from_user if message is not None else None
    if message is None or user is None or user.is_bot:
        return None
    if message.chat.type not in (ChatType.PRIVATE, ChatType.GROUP, ChatType.SUPERGROUP):
        return None
    is_caption = message.text is None
    text = (message.caption if is_caption else message.text) or ""
    attachments = _attachments(message)
    if not text and not attachments:
        return None
    origin = _forwarded_from(message)
    if origin is not None:
        return replace(
            _inbound(message, user, "", attachments, _mentions_bot(message, me, is_caption), me),
            quoted=(Quoted("forwarded", origin, text),) if text else (),
        )
    command = _COMMAND.match(text)
    if command is not None:
        if command.group(2).lower() != me.username.lower():
            return None
        text = f"/{command.group(1)}{text[command.end() :]}"
    mentions = command is not None or _mentions_bot(message, me, is_caption)
    text = _strip_leading_mention(text, me.username)
    return _with_reply(_inbound(message, user, text, attachments, mentions, me), message, me)


def _with_reply(inbound: InboundMessage, message: Message, me: BotIdentity) -> InboundMessage:
    """``inbound`` with the message it replies to (not a forum topic's implicit root)."""
    replied = message.reply_to_message
    if replied is None or replied.chat.id != message.chat.id:
        return inbound
    if message.is_topic_message and replied.message_id == message.message_thread_id:
        return inbound
    author = replied.from_user
    text = replied.text or replied.caption or ""
    if author is None:
        name = replied.sender_chat.title if replied.sender_chat is not None else ""
        return with_replied(inbound, "other", name or "", text)
    name = author.full_name or author.username or ""
    if author.id == me.id:
        return with_replied(inbound, "bot", name, text)
    return with_replied(
        inbound, "sender" if str(author.id) == inbound.user_id else "other", name, text
    )


def _inbound(
    message: Message,
    user: User,
    text: str,
    attachments: tuple[Attachment, ...],
    mentions: bool,
    me: BotIdentity,
) -> InboundMessage:
    thread_id = str(message.message_thread_id) if message.is_topic_message else None
    return InboundMessage(
        platform=PLATFORM,
        chat_id=str(message.chat.id),
        user_id=str(user.id),
        text=text,
        message_id=str(message.message_id),
        user_name=user.full_name or user.username or "",
        thread_id=thread_id,
        attachments=attachments,
        is_direct=message.chat.type == ChatType.PRIVATE,
        mentions_bot=mentions,
        reply_to_bot=_replies_to_bot(message, me),
    )


def _forwarded_from(message: Message) -> str | None:
    """Who wrote the forwarded message (a name), or None when it is not forwarded."""
    origin = message.forward_origin
    if origin is None:
        return None
    if isinstance(origin, MessageOriginUser):
        return origin.sender_user.full_name or origin.sender_user.username or ""
    if isinstance(origin, MessageOriginHiddenUser):
        return origin.sender_user_name
    if isinstance(origin, MessageOriginChat):
        return origin.author_signature or origin.sender_chat.title or ""
    if isinstance(origin, MessageOriginChannel):
        return origin.author_signature or origin.chat.title or ""
    return ""


def photo_to_fetch(message: Message) -> PhotoSize | None:
    """The largest size of the message's photo within ``MAX_IMAGE_BYTES``."""
    sizes = [s for s in message.photo if s.file_size is not None]
    fitting = [s for s in sizes if s.file_size is not None and s.file_size <= MAX_IMAGE_BYTES]
    return max(fitting, key=lambda s: s.width * s.height, default=None)


def with_image(message: InboundMessage, data: bytes) -> InboundMessage:
    """``message`` with the photo's bytes filled in."""
    attachments = tuple(
        replace(a, data=data, size=len(data)) if a.kind == "image" else a
        for a in message.attachments
    )
    return replace(message, attachments=attachments)


def _attachments(message: Message) -> tuple[Attachment, ...]:
    for attribute, kind in _MEDIA:
        media = getattr(message, attribute, None)
        if not media:
            continue
        if kind == "image":
            largest = max(message.photo, key=lambda s: s.width * s.height)
            return (Attachment("image", mime_type="image/jpeg", size=largest.file_size),)
        name = getattr(media, "file_name", None) or ""
        mime = getattr(media, "mime_type", None) or ""
        size = getattr(media, "file_size", None)
        duration = getattr(media, "duration", None)
        if isinstance(duration, timedelta):
            duration = duration.total_seconds()
        seconds = float(duration) if isinstance(duration, int | float) else None
        return (Attachment(kind, name=name, mime_type=mime, size=size, duration=seconds),)
    return ()


FETCHED = {"voice": "voice", "audio": "audio", "document": "document"}
"""Attachment kind → the message's attribute whose file is downloaded when read."""


def file_to_fetch(message: Message) -> str | None:
    """The ``file_id`` of the message's voice note, audio file or document, if any."""
    for attribute in FETCHED.values():
        media = getattr(message, attribute, None)
        if media is not None:
            return str(media.file_id)
    return None


def _mentions_bot(message: Message, me: BotIdentity, is_caption: bool) -> bool:
    types: list[str | None] = [MessageEntity.MENTION, MessageEntity.TEXT_MENTION]
    found = message.parse_caption_entities(types) if is_caption else message.parse_entities(types)
    handle = f"@{me.username}".lower()
    for entity, text in found.items():
        if entity.type == MessageEntity.MENTION and text.lower() == handle:
            return True
        if entity.type == MessageEntity.TEXT_MENTION and entity.user and entity.user.id == me.id:
            return True
    return False


def _strip_leading_mention(text: str, username: str) -> str:
    handle = f"@{username}"
    if text[: len(handle)].lower() != handle.lower():
        return text
    rest = text[len(handle) :]
    if rest and rest[0] not in _LEADING_PUNCTUATION:
        return text  # a longer username that starts the same
    return rest.lstrip(_LEADING_PUNCTUATION)


def _replies_to_bot(message: Message, me: BotIdentity) -> bool:
    replied = message.reply_to_message
    if replied is None or replied.from_user is None or replied.from_user.id != me.id:
        return False
    topic_root = message.is_topic_message and replied.message_id == message.message_thread_id
    return not topic_root

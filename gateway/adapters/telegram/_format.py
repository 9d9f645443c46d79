"""The model's Markdown as Telegram shows it: plain text plus message entities.

telegramify-markdown does the conversion; sending entities instead of a
``parse_mode`` means there is no escaping to get wrong. When the conversion fails,
or would not fit in one message, the Markdown goes out as it is, as plain text;
the sender does the same when Telegram rejects the entities.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import telegramify_markdown
from telegram import MessageEntity
from telegram.error import BadRequest

from gateway.adapters._text_split import utf16_length

logger = logging.getLogger(__name__)

MAX_MESSAGE_LENGTH = 4096
"""Telegram's limit for one message's text, in UTF-16 code units (after entity parsing)."""


@dataclass(frozen=True, slots=True)
class Rendered:
    """Text ready for ``sendMessage``/``editMessageText``; no entities means plain text."""

    text: str
    entities: tuple[MessageEntity, ...] = ()

    @property
    def formatted(self) -> bool:
        return bool(self.entities)


def plain(text: str) -> Rendered:
    return Rendered(text)


def render(markdown: str, limit: int = MAX_MESSAGE_LENGTH) -> Rendered:
    """``markdown`` converted to Telegram text and entities; plain text when that fails."""
    try:
        text, entities = telegramify_markdown.convert(markdown)
    except Exception as exc:  # a converter bug must not cost the message
        logger.debug("markdown conversion failed (%s); sending plain text", type(exc).__name__)
        return plain(markdown)
    if not text.strip() or utf16_length(text) > limit:
        return plain(markdown)
    if not entities:
        return plain(text)
    return Rendered(text, tuple(MessageEntity.de_json(e.to_dict(), None) for e in entities))


def is_format_error(exc: BadRequest) -> bool:
    """Telegram refused the entities (``can't parse entities``, an entity out of range, …)."""
    message = exc.message.lower()
    return "entit" in message or "parse" in message


def is_not_modified(exc: BadRequest) -> bool:
    """An edit to the text the message already shows: nothing to do."""
    return "message is not modified" in exc.message.lower()

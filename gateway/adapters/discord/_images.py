"""Files shared in a Discord message: images fetched for a vision model (``llm.vision``),
voice notes, audio files and documents made downloadable for when they are read.

Only attachments Discord marks as images, no larger than ``MAX_IMAGE_BYTES`` (the
size Discord states), and only from Discord's CDN (or the host of
``discord.api_url``) are downloaded; anything else stays a plain attachment
note. A failed download leaves the message as it is: the text is answered.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from urllib.parse import urlsplit

import aiohttp
import discord

from gateway.adapters._support import MAX_IMAGE_BYTES
from gateway.events import READ_KINDS, FileFetch, InboundMessage

logger = logging.getLogger(__name__)

CDN_HOSTS = frozenset({"cdn.discordapp.com", "media.discordapp.net"})


def fetchable(attachment: discord.Attachment, api_url: str | None) -> bool:
    """An image from Discord's CDN (or the configured API's host) within the size cap."""
    mime = (attachment.content_type or "").split(";")[0].strip()
    if not mime.startswith("image/") or not 0 < attachment.size <= MAX_IMAGE_BYTES:
        return False
    return from_discord(attachment, api_url)


def from_discord(attachment: discord.Attachment, api_url: str | None) -> bool:
    """Whether the file is served by Discord's CDN (or the configured API's host)."""
    hosts = set(CDN_HOSTS)
    if api_url:
        hosts.add(urlsplit(api_url).netloc)
    parts = urlsplit(attachment.url)
    return parts.scheme in ("https", "http") and parts.netloc in hosts


async def with_images(
    message: InboundMessage, source: discord.Message, api_url: str | None
) -> InboundMessage:
    """``message`` with the bytes of each fetchable image of ``source`` in its attachment."""
    attachments = list(message.attachments)
    for index, attachment in enumerate(source.attachments):
        if index >= len(attachments) or not fetchable(attachment, api_url):
            continue
        try:
            data = await attachment.read()
        except (discord.HTTPException, aiohttp.ClientError, TimeoutError, OSError) as exc:
            logger.warning("discord: an image could not be downloaded (%s)", type(exc).__name__)
            continue
        if len(data) > MAX_IMAGE_BYTES:
            logger.warning("discord: an image was larger than it said; left out")
            continue
        attachments[index] = replace(attachments[index], data=data, size=len(data))
    return replace(message, attachments=tuple(attachments))


def with_fetching(
    message: InboundMessage, source: discord.Message, api_url: str | None
) -> InboundMessage:
    """``message`` whose voice notes, audio files and documents download when read."""
    attachments = list(message.attachments)
    for index, attachment in enumerate(source.attachments):
        if index >= len(attachments) or attachments[index].kind not in READ_KINDS:
            continue
        if from_discord(attachment, api_url):
            attachments[index] = replace(attachments[index], fetch=_fetch_of(attachment))
    return replace(message, attachments=tuple(attachments))


def _fetch_of(attachment: discord.Attachment) -> FileFetch:
    async def fetch(limit: int) -> bytes | None:
        if attachment.size > limit:
            return None
        try:
            data = await attachment.read()
        except (discord.HTTPException, aiohttp.ClientError, TimeoutError, OSError) as exc:
            logger.warning("discord: a file could not be downloaded (%s)", type(exc).__name__)
            return None
        return data if len(data) <= limit else None

    return fetch

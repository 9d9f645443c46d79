"""Payloads of the fake Discord: users, the guild, messages, as the API shapes them."""

from __future__ import annotations

import itertools
import json
import time
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

TOKEN = "MTIzNDU2Nzg5MDEyMzQ1Njc4.Gfake0.fake-discord-bot-token-0000"
BOT_ID = 900_000_000_000_000_001
BOT_NAME = "chorus"
APP_ID = 900_000_000_000_000_002
GUILD_ID = 910_000_000_000_000_001
CHANNEL_ID = 920_000_000_000_000_001
THREAD_ID = 920_000_000_000_000_002
DISCORD_EPOCH_MS = 1_420_070_400_000
VOICE_MESSAGE_FLAG = 1 << 13
"""``IS_VOICE_MESSAGE``: the message is a voice message (one audio attachment)."""

_counter = itertools.count(1)


def snowflake() -> int:
    """A fresh id whose timestamp is now, like Discord's."""
    now_ms = int(time.time() * 1000) - DISCORD_EPOCH_MS
    return (now_ms << 22) + (next(_counter) % 4096)


def iso_now() -> str:
    return datetime.now(UTC).isoformat()


def user(user_id: int, name: str, *, bot: bool = False) -> dict[str, Any]:
    return {
        "id": str(user_id),
        "username": name,
        "discriminator": "0",
        "global_name": name.title(),
        "avatar": None,
        "bot": bot,
    }


BOT_USER = user(BOT_ID, BOT_NAME, bot=True)


def application() -> dict[str, Any]:
    return {
        "id": str(APP_ID),
        "name": BOT_NAME,
        "description": "",
        "icon": None,
        "bot_public": False,
        "bot_require_code_grant": False,
        "owner": user(1, "owner"),
        "verify_key": "0" * 64,
        "flags": 0,
    }


def guild(
    guild_id: int = GUILD_ID, channel_id: int | None = None, thread_id: int | None = None
) -> dict[str, Any]:
    """GUILD_CREATE data: one text channel and one thread under it.

    The first guild has ``CHANNEL_ID`` and ``THREAD_ID``; another guild's channel and
    thread ids are its own id + 1 and + 2 unless given.
    """
    first = guild_id == GUILD_ID
    channel = channel_id or (CHANNEL_ID if first else guild_id + 1)
    thread = thread_id or (THREAD_ID if first else guild_id + 2)
    return {
        "id": str(guild_id),
        "name": "Team",
        "owner_id": "1",
        "unavailable": False,
        "member_count": 3,
        "joined_at": iso_now(),
        "features": [],
        "emojis": [],
        "stickers": [],
        "members": [  # without the members intent: the bot's own member only
            {
                "user": BOT_USER,
                "roles": [],
                "joined_at": iso_now(),
                "deaf": False,
                "mute": False,
                "flags": 0,
            }
        ],
        "presences": [],
        "voice_states": [],
        "roles": [
            {
                "id": str(guild_id),
                "name": "@everyone",
                "permissions": "274877975552",  # view, send (in threads too), history
                "position": 0,
                "color": 0,
                "hoist": False,
                "managed": False,
                "mentionable": False,
            }
        ],
        "channels": [
            {
                "id": str(channel),
                "type": 0,
                "name": "general",
                "position": 0,
                "permission_overwrites": [],
                "guild_id": str(guild_id),
            }
        ],
        "threads": [
            {
                "id": str(thread),
                "type": 11,
                "name": "a thread",
                "parent_id": str(channel),
                "owner_id": "1",
                "guild_id": str(guild_id),
                "message_count": 1,
                "member_count": 1,
                "thread_metadata": {
                    "archived": False,
                    "auto_archive_duration": 1440,
                    "archive_timestamp": iso_now(),
                    "locked": False,
                },
            }
        ],
    }


def message(
    *,
    message_id: int,
    channel_id: int,
    author: dict[str, Any],
    content: str,
    guild_id: int | None = None,
    mentions: list[dict[str, Any]] | None = None,
    referenced: dict[str, Any] | None = None,
    nonce: str | None = None,
    attachments: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": str(message_id),
        "channel_id": str(channel_id),
        "author": author,
        "content": content,
        "timestamp": iso_now(),
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": mentions or [],
        "mention_roles": [],
        "attachments": attachments or [],
        "embeds": [],
        "pinned": False,
        "type": 19 if referenced else 0,
        "flags": VOICE_MESSAGE_FLAG if any("waveform" in a for a in attachments or ()) else 0,
    }
    if nonce is not None:
        data["nonce"] = nonce
    if guild_id is not None:
        data["guild_id"] = str(guild_id)
        data["member"] = {"roles": [], "joined_at": iso_now(), "deaf": False, "mute": False}
    if referenced is not None:
        data["referenced_message"] = referenced
        data["message_reference"] = {
            "message_id": referenced["id"],
            "channel_id": str(referenced.get("channel_id") or channel_id),
            **({"guild_id": str(guild_id)} if guild_id else {}),
        }
    return data


def attachment(
    attachment_id: int, name: str, url: str, *, content_type: str, size: int
) -> dict[str, Any]:
    """A file on a message, as MESSAGE_CREATE names it (``url`` where it downloads)."""
    return {
        "id": str(attachment_id),
        "filename": name,
        "size": size,
        "url": url,
        "proxy_url": url,
        "content_type": content_type,
    }


def json_response(
    data: Any, *, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    """JSON as Discord sends it: ``Content-Type`` exactly ``application/json``."""
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    return web.Response(body=json.dumps(data).encode(), status=status, headers=all_headers)

"""``sendVoice`` of the fake Telegram Bot API, as the Bot API specifies it.

``voice``: a new file (multipart upload) or a ``file_id`` string; Telegram plays
it as a voice message when it is OGG encoded with Opus (or MP3, or M4A), at most
50 MB. Optional ``caption`` (0-1024 characters), ``duration``,
``message_thread_id`` and ``reply_parameters``. A chat whose person blocked the
bot, or never started it, refuses it as ``sendMessage`` does; a person whose
privacy settings take voice messages from nobody (a Telegram Premium setting,
``FakeTelegram.voice_forbidden``) refuses it with 400 "VOICE_MESSAGES_FORBIDDEN".
The answer is the sent ``Message`` with its ``voice`` (``Voice``: ``file_id``,
``file_unique_id``, ``duration``, ``mime_type``, ``file_size``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tests.fakes.telegram_data import ApiError, utf16_len

if TYPE_CHECKING:
    from tests.fakes.telegram_api import FakeTelegram

VOICE_LIMIT = 50 * 1024 * 1024


@dataclass
class VoiceNote:
    """A voice message the bot sent (``sendVoice``)."""

    chat_id: int
    message_id: int
    data: bytes
    mime_type: str
    thread_id: int | None
    reply_to: int | None
    caption: str
    duration: int | None


def mime_of(data: bytes) -> str:
    """What a voice file is, from its first bytes, as Telegram tells them apart."""
    if data.startswith(b"OggS"):
        return "audio/ogg"
    if data.startswith(b"ID3") or data[:2] in (b"\xff\xfb", b"\xff\xf3"):
        return "audio/mpeg"
    if data[4:8] == b"ftyp":
        return "audio/mp4"
    return "application/octet-stream"


async def send_voice(fake: FakeTelegram, params: dict[str, Any]) -> dict[str, Any]:
    chat_id = int(params["chat_id"])
    if chat_id in fake.blocked:
        raise ApiError(403, "Forbidden: bot was blocked by the user")
    if chat_id > 0 and chat_id not in fake.started:
        raise ApiError(403, "Forbidden: bot can't initiate conversation with a user")
    if chat_id in fake.voice_forbidden:
        raise ApiError(400, "Bad Request: VOICE_MESSAGES_FORBIDDEN")
    voice = params.get("voice")
    if isinstance(voice, str) and voice.startswith("attach://"):
        voice = params.get(voice.removeprefix("attach://"))
    if not isinstance(voice, bytes) or not voice:
        raise ApiError(400, "Bad Request: there is no voice in the request")
    if len(voice) > VOICE_LIMIT:
        raise ApiError(413, "Request Entity Too Large")
    caption = str(params.get("caption") or "")
    if utf16_len(caption) > 1024:
        raise ApiError(400, "Bad Request: message caption is too long")
    thread = params.get("message_thread_id")
    reply = params.get("reply_parameters") or {}
    duration = params.get("duration")
    sent = VoiceNote(
        chat_id,
        next(fake._bot_message_ids),
        voice,
        mime_of(voice),
        int(thread) if thread is not None else None,
        reply.get("message_id"),
        caption,
        int(duration) if duration is not None else None,
    )
    with fake._lock:
        fake.voices.append(sent)
    chat = {"id": chat_id, "type": "private" if chat_id > 0 else "supergroup"}
    message: dict[str, Any] = {
        "message_id": sent.message_id,
        "date": int(time.time()),
        "chat": chat,
        "from": fake._bot_user(),
        "voice": {
            "file_id": f"voice{sent.message_id}",
            "file_unique_id": f"voice{sent.message_id}",
            "duration": sent.duration or 0,
            "mime_type": sent.mime_type,
            "file_size": len(voice),
        },
    }
    if caption:
        message["caption"] = caption
    if sent.thread_id is not None:
        message["message_thread_id"] = sent.thread_id
        message["is_topic_message"] = True
    return message

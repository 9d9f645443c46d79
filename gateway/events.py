"""What flows between platform adapters and the runner: plain, frozen values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

AttachmentKind = Literal["image", "voice", "audio", "video", "document", "sticker", "other"]


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file that came with a message; ``data`` only for small images an adapter fetched."""

    kind: AttachmentKind
    name: str = ""
    mime_type: str = ""
    size: int | None = None
    data: bytes | None = None


@dataclass(frozen=True, slots=True)
class InboundMessage:
    """One message from a person, as any platform delivers it."""

    platform: str
    chat_id: str
    user_id: str
    text: str
    message_id: str
    user_name: str = ""
    thread_id: str | None = None
    attachments: tuple[Attachment, ...] = ()
    is_direct: bool = True
    mentions_bot: bool = False
    reply_to_bot: bool = False

    @property
    def user_key(self) -> str:
        return f"{self.platform}:{self.user_id}"


@dataclass(frozen=True, slots=True)
class OutboundMessage:
    """One reply for a chat; the adapter formats and splits it for its platform."""

    platform: str
    chat_id: str
    text: str
    thread_id: str | None = None
    reply_to_message_id: str | None = None
    kind: Literal["reply", "notice", "error"] = "reply"


@dataclass(frozen=True, slots=True)
class SessionKey:
    """Which conversation a message belongs to (see ``sessions.scope`` and ``sessions.threads``)."""

    platform: str
    chat_id: str
    user_id: str | None
    thread_id: str | None = None

    def __str__(self) -> str:
        parts = [self.platform, self.chat_id, self.user_id or "*", self.thread_id or "-"]
        return "/".join(parts)


@dataclass(frozen=True, slots=True)
class SentMessage:
    """What an adapter returns for a sent message, so it can be edited later."""

    chat_id: str
    message_id: str
    thread_id: str | None = None

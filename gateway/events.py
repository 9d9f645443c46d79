"""What flows between platform adapters and the runner: plain, frozen values."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Literal

from memory.paths import ChatRef, UserKey

AttachmentKind = Literal["image", "voice", "audio", "video", "document", "sticker", "other"]
QuotedSource = Literal["thread", "forwarded", "document", "reply"]
READ_KINDS: frozenset[AttachmentKind] = frozenset({"voice", "audio", "document"})
"""Attachments read into the message (``gateway.media``): downloaded by ``Attachment.fetch``."""
FileFetch = Callable[[int], Awaitable[bytes | None]]
"""Downloads an attachment, at most the given number of bytes (None: too big or failed)."""


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file that came with a message; ``data`` only for small images an adapter fetched.

    ``fetch`` downloads a voice note, audio file or document when it is read
    (``gateway.media``), after the sender was admitted: nothing is downloaded for
    a message that is not answered. It is not kept in the durable inbox.
    """

    kind: AttachmentKind
    name: str = ""
    mime_type: str = ""
    size: int | None = None
    data: bytes | None = None
    duration: float | None = None
    """Seconds of a voice note or audio file, where the platform says."""
    fetch: FileFetch | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Quoted:
    """Words a message carries that its sender did not write: others' content.

    ``thread``: an earlier message of the thread, given as context; ``forwarded``:
    the text of a forwarded message; ``document``: the text of a shared file (``author``
    is its name); ``reply``: the message this one replies to, written by someone else.
    The model is shown them fenced as quoted material, and a turn that carries them may
    not write shared memory unreviewed.
    """

    source: QuotedSource
    author: str
    text: str


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
    receipts: tuple[str, ...] = ()
    """The platform deliveries this message came in, as recorded in the durable inbox
    (none for platforms without one): the turn is done when all of them are."""
    resume: tuple[str, ...] = ()
    """Messages of an answer that was being streamed when the process died; the new
    answer is edited into them (set when a pending turn is taken up after a restart)."""
    quoted: tuple[Quoted, ...] = ()
    """Others' words that came with the message (``text`` is the sender's own only)."""
    in_reply_to: Quoted | None = None
    """The message this one replies to, when its sender or the bot wrote it (someone
    else's comes in ``quoted``): context, not others' words. Same chat only."""
    merged_from: tuple[tuple[str, int], ...] = ()
    """A message answered again after one part of a turn merged from several messages
    was edited: each part's platform id and the length of its text in ``text``."""

    @property
    def others_content(self) -> bool:
        """Whether the message carries words its sender did not write."""
        return bool(self.quoted)

    @property
    def user_key(self) -> UserKey:
        """Who wrote it."""
        return UserKey(self.platform, self.user_id)

    @property
    def chat(self) -> ChatRef:
        """Where it was written."""
        return ChatRef(self.platform, self.chat_id, self.thread_id)


def turn_ref(message: InboundMessage) -> tuple[str, str, str]:
    """(platform, chat id, message id): how a turn's trace finds its message."""
    return (message.platform, message.chat_id, message.message_id)


def message_to_json(message: InboundMessage) -> str:
    """``message`` as JSON for the durable inbox (attachment bytes are left out)."""
    attachments = tuple(replace(a, data=None, fetch=None) for a in message.attachments)
    data = asdict(replace(message, attachments=attachments))
    for attachment in data["attachments"]:
        attachment.pop("fetch", None)
    data.pop("resume", None)
    return json.dumps(data, ensure_ascii=False)


def message_from_json(text: str) -> InboundMessage:
    """The inverse of ``message_to_json``; ``ValueError`` or ``TypeError`` when unreadable."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("not a message")
    attachments = tuple(Attachment(**a) for a in data.pop("attachments", []))
    receipts = tuple(str(r) for r in data.pop("receipts", []))
    quoted = tuple(Quoted(**q) for q in data.pop("quoted", []))
    replied = data.pop("in_reply_to", None)
    merged = tuple((str(i), int(n)) for i, n in data.pop("merged_from", []))
    return InboundMessage(
        **data,
        merged_from=merged,
        attachments=attachments,
        receipts=receipts,
        quoted=quoted,
        in_reply_to=Quoted(**replied) if isinstance(replied, dict) else None,
    )


def clean_text(text: str) -> str:
    """``text`` safe to store and send: lone surrogates become U+FFFD, NUL is dropped.

    A lone surrogate (``\\ud800``) cannot be encoded as UTF-8, so it would break
    every later write of the session (transcript, LLM request) until ``/new``.
    """
    if text.isascii():
        return text.replace("\x00", "")
    fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return fixed.replace("\x00", "")


def cleaned(message: InboundMessage) -> InboundMessage:
    """``message`` with every text field through ``clean_text``."""
    text, name = clean_text(message.text), clean_text(message.user_name)
    quoted = tuple(
        replace(q, author=clean_text(q.author), text=clean_text(q.text)) for q in message.quoted
    )
    replied = message.in_reply_to
    if replied is not None:
        replied = replace(replied, author=clean_text(replied.author), text=clean_text(replied.text))
    if (text, name, quoted, replied) == (
        message.text,
        message.user_name,
        message.quoted,
        message.in_reply_to,
    ):
        return message
    return replace(message, text=text, user_name=name, quoted=quoted, in_reply_to=replied)


@dataclass(frozen=True, slots=True)
class OutboundMessage:
    """One reply for a chat; the adapter formats and splits it for its platform."""

    platform: str
    chat_id: str
    text: str
    thread_id: str | None = None
    reply_to_message_id: str | None = None
    kind: Literal["reply", "notice", "error"] = "reply"
    to_stranger: bool = False
    """A notice to someone the bot does not serve (a refusal, a pairing code): it goes
    out with budget left over from everyone else's messages, where the adapter paces."""


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


EDITED = ":edited"
"""Ends the message id of a message answered again after its author edited it."""


def platform_message_id(message_id: str) -> str:
    """The platform's own id of a message answered again after an edit (``EDITED``)."""
    while message_id.endswith(EDITED):
        message_id = message_id.removesuffix(EDITED)
    return message_id


@dataclass(frozen=True, slots=True)
class Retraction:
    """A person deleted (``text`` None) or edited (``text``: the new text) a message of
    theirs on the platform, after it may have reached a session's transcript.
    ``user_id`` is who wrote it; ``""`` when the platform does not say."""

    platform: str
    chat_id: str
    user_id: str
    message_id: str
    text: str | None = None

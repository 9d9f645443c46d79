"""Voice notes and documents read into a message, once its sender has been admitted.

``MediaReader.read`` turns each voice note or audio file of a message into its
transcript (``llm.transcription_model``, through the endpoint's
``/v1/audio/transcriptions``) and each document into its text, quoted as
others' content. The transcript joins the sender's text after ``VOICE_MARK``,
so the model is told it is machine-made and the transcript keeps the mark.
What cannot be read (no transcription model, past a limit, a kind of file
chorus does not read, a damaged PDF) becomes a sentence for the sender in
``Reading.problems``; the rest of the message is still answered.

A transcription is an LLM call of the sender's: with a ``Charge`` it is held
against their budget and written to the usage ledger (``purpose`` ``transcription``).
A sender whose budget is spent gets the budget's refusal instead, no request
is made, and the message is not answered (``Reading.refused``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from agent.errors import BudgetExhausted, LLMError
from agent.settings import LLMSettings
from agent.usage import Charge
from gateway.events import READ_KINDS, Attachment, InboundMessage, Quoted
from gateway.media import _texts as t
from gateway.media._documents import (
    UnreadableDocument,
    document_kind,
    document_text,
    truncated,
)
from gateway.media._settings import MediaSettings

logger = logging.getLogger(__name__)

_SUFFIXES = {
    "audio/ogg": "ogg",
    "audio/opus": "ogg",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/mp4": "m4a",
    "audio/x-m4a": "m4a",
    "audio/m4a": "m4a",
    "audio/aac": "m4a",
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/webm": "webm",
    "audio/flac": "flac",
    "video/mp4": "mp4",
}


class Transcriber(Protocol):
    """The endpoint's speech to text (``agent.llm.LLMClient.transcribe``)."""

    async def transcribe(
        self,
        audio: bytes,
        *,
        filename: str,
        model: str,
        charge: Charge | None = None,
        seconds: float | None = None,
    ) -> str: ...


@dataclass(frozen=True, slots=True)
class Reading:
    """A message with its voice notes and documents read, and what could not be."""

    message: InboundMessage
    problems: tuple[str, ...] = ()
    refused: bool = False
    """The sender's budget is spent: a voice note was not transcribed, nothing is answered."""

    @property
    def nothing_left(self) -> bool:
        """Whether nothing is left to answer (no text, quoted words or other attachment)."""
        m = self.message
        return not m.text.strip() and not m.quoted and not m.attachments


class MediaReader:
    def __init__(
        self,
        settings: Callable[[], tuple[LLMSettings, MediaSettings]],
        transcriber: Transcriber | None,
    ) -> None:
        self._settings = settings
        self._transcriber = transcriber

    async def read(self, msg: InboundMessage, charge: Charge | None = None) -> Reading:
        """``msg`` with its voice notes transcribed (charged to ``charge``) and its documents
        quoted. Never raises."""
        if not any(a.kind in READ_KINDS for a in msg.attachments):
            return Reading(msg)
        llm, limits = self._settings()
        spoken: list[str] = []
        documents: list[Quoted] = []
        problems: list[str] = []
        kept: list[Attachment] = []
        refused = False
        for attachment in msg.attachments:
            if attachment.kind not in READ_KINDS:
                kept.append(attachment)
                continue
            if refused and attachment.kind != "document":
                continue  # told once; no further request
            try:
                if attachment.kind == "document":
                    found = await self._document(attachment, limits)
                    if isinstance(found, Quoted):
                        documents.append(found)
                        continue
                else:
                    found = await self._voice(attachment, llm, limits, charge)
                    if found.startswith(t.VOICE_MARK):
                        spoken.append(found)
                        continue
            except BudgetExhausted as exc:  # the meter logged it; the sender is told why
                refused = True
                found = str(exc)
            except Exception:
                logger.exception("reading a %s %s failed", msg.platform, attachment.kind)
                found = t.NOT_DOWNLOADED.format(name=_name_of(attachment))
            problems.append(found)
        text = "\n\n".join(part for part in [msg.text.strip(), *spoken] if part)
        message = replace(
            msg,
            text=text if spoken else msg.text,
            attachments=tuple(kept),
            quoted=(*msg.quoted, *documents),
        )
        return Reading(message, tuple(problems), refused)

    async def _voice(
        self, a: Attachment, llm: LLMSettings, limits: MediaSettings, charge: Charge | None
    ) -> str:
        """The transcript after ``VOICE_MARK``, or what to tell the sender."""
        model = llm.transcription_model
        if not model or self._transcriber is None:
            logger.info("a voice message was not transcribed: llm.transcription_model is unset")
            return t.NO_VOICE
        if a.duration is not None and a.duration > limits.max_voice_seconds:
            return t.VOICE_TOO_LONG.format(limit=t.seconds_text(limits.max_voice_seconds))
        too_big = t.VOICE_TOO_BIG.format(limit=t.size_text(limits.max_voice_bytes))
        if a.size is not None and a.size > limits.max_voice_bytes:
            return too_big
        data = await _download(a, limits.max_voice_bytes)
        if data is None:
            return t.NOT_DOWNLOADED.format(name="that voice message")
        if len(data) > limits.max_voice_bytes:
            return too_big
        try:
            words = await self._transcriber.transcribe(
                data,
                filename=_audio_name(a),
                model=model,
                charge=charge,
                seconds=float(a.duration) if a.duration is not None else None,
            )
        except LLMError as exc:
            logger.warning("a voice message could not be transcribed (%s)", exc)
            return t.VOICE_FAILED
        words = words.strip()
        if not words:
            return t.VOICE_SILENT
        logger.debug("voice message transcribed: %s", words)
        return f"{t.VOICE_MARK}\n{words}"

    async def _document(self, a: Attachment, limits: MediaSettings) -> Quoted | str:
        """The document's text as others' words, or what to tell the sender."""
        name = _name_of(a)
        kind = document_kind(a.name, a.mime_type)
        if kind is None:
            logger.info("a file of type %r was not read (not a kind chorus reads)", a.mime_type)
            return t.UNREADABLE_KIND.format(name=name)
        too_big = t.DOCUMENT_TOO_BIG.format(name=name, limit=t.size_text(limits.max_document_bytes))
        if a.size is not None and a.size > limits.max_document_bytes:
            return too_big
        data = await _download(a, limits.max_document_bytes)
        if data is None:
            return t.NOT_DOWNLOADED.format(name=name)
        if len(data) > limits.max_document_bytes:
            return too_big
        try:
            text = await asyncio.to_thread(document_text, kind, data)
        except UnreadableDocument as exc:
            logger.warning("a shared %s could not be read (%s)", kind, exc)
            return t.DOCUMENT_BROKEN.format(name=name)
        if not text.strip():
            return t.DOCUMENT_EMPTY.format(name=name)
        text = truncated(text, limits.max_document_chars, t.TRUNCATED)
        return Quoted("document", a.name or "file", text)


async def _download(a: Attachment, limit: int) -> bytes | None:
    if a.data is not None:
        return a.data
    if a.fetch is None:
        return None
    return await a.fetch(limit)


def _name_of(a: Attachment) -> str:
    return f'"{a.name}"' if a.name else "that file"


def _audio_name(a: Attachment) -> str:
    """A file name whose extension tells the endpoint the audio's format."""
    if a.name and "." in a.name:
        return a.name
    suffix = _SUFFIXES.get(a.mime_type.split(";")[0].strip().lower(), "ogg")
    return f"{a.name or a.kind}.{suffix}"

"""Voice notes transcribed and documents read into a person's message (``MediaReader``),
and answers read out as spoken replies (``SpokenReplies``)."""

from gateway.media._charge import transcription_charge
from gateway.media._documents import document_kind, document_text
from gateway.media._reader import MediaReader, Reading, Transcriber
from gateway.media._settings import MAX_FILE_BYTES, MediaSettings
from gateway.media._spoken import (
    Outcome,
    Speaker,
    SpokenReplies,
    VoiceChoice,
    VoiceOut,
    spoken_text,
)
from gateway.media._texts import VOICE_MARK
from gateway.media._voice_choice import StoredVoiceChoice

__all__ = [
    "MAX_FILE_BYTES",
    "VOICE_MARK",
    "MediaReader",
    "MediaSettings",
    "Outcome",
    "Reading",
    "Speaker",
    "SpokenReplies",
    "StoredVoiceChoice",
    "Transcriber",
    "VoiceChoice",
    "VoiceOut",
    "document_kind",
    "document_text",
    "spoken_text",
    "transcription_charge",
]

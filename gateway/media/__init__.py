"""Voice notes transcribed and documents read into a person's message (``MediaReader``)."""

from gateway.media._charge import transcription_charge
from gateway.media._documents import document_kind, document_text
from gateway.media._reader import MediaReader, Reading, Transcriber
from gateway.media._settings import MAX_FILE_BYTES, MediaSettings
from gateway.media._texts import VOICE_MARK

__all__ = [
    "MAX_FILE_BYTES",
    "VOICE_MARK",
    "MediaReader",
    "MediaSettings",
    "Reading",
    "Transcriber",
    "document_kind",
    "document_text",
    "transcription_charge",
]

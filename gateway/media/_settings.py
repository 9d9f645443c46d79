"""The ``media`` section: how large a voice note or a document chorus reads may be, and how
long an answer it reads out."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from agent.speech import MAX_SPEECH_CHARS
from memory.settings import LIVE

MAX_FILE_BYTES = 20 * 1024 * 1024
"""Largest file any adapter downloads (Telegram's bots may fetch no larger ones)."""


class MediaSettings(BaseModel):
    """Limits on the voice notes transcribed and the documents read into a turn."""

    model_config = ConfigDict(extra="forbid")

    max_voice_bytes: Annotated[int, LIVE] = Field(
        MAX_FILE_BYTES, gt=0, le=MAX_FILE_BYTES, description="Largest voice note transcribed."
    )
    max_voice_seconds: Annotated[float, LIVE] = Field(
        300, gt=0, description="Longest voice note transcribed (where the platform says)."
    )
    max_document_bytes: Annotated[int, LIVE] = Field(
        10 * 1024 * 1024, gt=0, le=MAX_FILE_BYTES, description="Largest document read."
    )
    max_document_chars: Annotated[int, LIVE] = Field(
        20_000,
        gt=0,
        description="Characters of a document's text given to the model; "
        "the rest is cut off with a note.",
    )
    max_spoken_chars: Annotated[int, LIVE] = Field(
        1500,
        gt=0,
        le=MAX_SPEECH_CHARS,
        description="Longest answer also sent as a spoken reply (llm.speech_model, "
        "/voice on); a longer one is sent as text only.",
    )

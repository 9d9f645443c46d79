"""What a spoken reply (``/v1/audio/speech``) uses, for the usage ledger.

The endpoint answers with the audio alone: no usage is reported. The call is
therefore recorded as an estimate (and marked so): the text read out as input
tokens, and the audio it makes as output — ``AUDIO_OUTPUT_TOKENS_PER_SECOND``
for the time the text takes to say (``SPOKEN_CHARS_PER_SECOND``). Priced by
``llm.pricing.<speech model>`` like any other model.
"""

from __future__ import annotations

import math
from typing import Final, Literal

from agent.transcription import SPOKEN_CHARS_PER_SECOND
from agent.usage import estimate_text

__all__ = [
    "AUDIO_OUTPUT_TOKENS_PER_SECOND",
    "MAX_SPEECH_CHARS",
    "SPEECH_FORMAT",
    "speech_usage",
]

AUDIO_OUTPUT_TOKENS_PER_SECOND = 20
"""Audio output tokens a second of speech counts as (OpenAI's ``gpt-4o-mini-tts``: about
1,250 a minute, its $0.015 a minute at $12 per million audio tokens)."""
MAX_SPEECH_CHARS = 4096
"""The most text one ``/v1/audio/speech`` request may read out (the API's limit)."""
SPEECH_FORMAT: Final[Literal["opus"]] = "opus"
"""The audio asked for: Opus in an OGG container, what Telegram plays as a voice message
(and Discord and Slack play as an audio file)."""


def speech_usage(text: str) -> tuple[int, int, int]:
    """(input, cached input, output) tokens a spoken ``text`` is estimated to use."""
    seconds = len(text) / SPOKEN_CHARS_PER_SECOND
    return estimate_text(text), 0, max(1, math.ceil(seconds * AUDIO_OUTPUT_TOKENS_PER_SECOND))

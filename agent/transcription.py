"""What a transcription (``/v1/audio/transcriptions``) used, for the usage ledger.

The endpoint reports it beside the text (``Transcription.usage`` of the openai
client): token-billed models (``gpt-4o-transcribe``…) as
``{"type": "tokens", "input_tokens", "output_tokens", …}`` — recorded as
reported — and duration-billed ones (``whisper-1``) as
``{"type": "duration", "seconds"}``, which holds no tokens. Then, and when an
endpoint reports nothing, the tokens are estimated (and marked so): the audio
at ``AUDIO_TOKENS_PER_SECOND`` for the length reported, else the length the
platform gave, else the length the transcript's words take to say; the
transcript's text as output.
"""

from __future__ import annotations

from typing import Any

from agent.usage import OUTPUT_ALLOWANCE, estimate_text

__all__ = [
    "AUDIO_TOKENS_PER_SECOND",
    "expected_tokens",
    "transcription_usage",
]

AUDIO_TOKENS_PER_SECOND = 10
"""Audio input tokens a second of speech counts as (OpenAI's audio models: one per 100 ms)."""
SPOKEN_CHARS_PER_SECOND = 15
"""Characters of transcript a second of ordinary speech gives (about 150 words a minute)."""
AUDIO_BYTES_PER_SECOND = 4_000
"""Bytes a second of a compressed voice note takes (32 kbit/s), when its length is unknown."""


def expected_tokens(size: int, seconds: float | None) -> int:
    """What a reservation holds for transcribing ``size`` bytes of audio (``seconds`` long,
    when the platform said)."""
    if seconds is None or seconds <= 0:
        seconds = size / AUDIO_BYTES_PER_SECOND
    return max(1, round(seconds * AUDIO_TOKENS_PER_SECOND)) + OUTPUT_ALLOWANCE


def transcription_usage(
    usage: Any, text: str, seconds: float | None
) -> tuple[tuple[int, int, int], bool]:
    """(input, cached input, output) tokens of a transcription and whether they are an
    estimate. ``usage``: the response's ``usage`` (an openai model, a dict or None)."""
    kind = _field(usage, "type")
    if kind == "tokens":
        inputs, outputs = _count(usage, "input_tokens"), _count(usage, "output_tokens")
        if inputs is not None and outputs is not None:
            return (inputs, 0, outputs), False
    if kind == "duration":
        reported = _field(usage, "seconds")
        if isinstance(reported, int | float) and reported >= 0:
            seconds = float(reported)
    if seconds is None or seconds <= 0:
        seconds = len(text) / SPOKEN_CHARS_PER_SECOND
    audio = max(1, round(seconds * AUDIO_TOKENS_PER_SECOND))
    return (audio, 0, estimate_text(text)), True


def _field(usage: Any, name: str) -> Any:
    if isinstance(usage, dict):
        return usage.get(name)
    return getattr(usage, name, None)


def _count(usage: Any, name: str) -> int | None:
    value = _field(usage, name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value

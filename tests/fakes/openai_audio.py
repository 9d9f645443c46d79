"""``POST /v1/audio/transcriptions`` of the fake OpenAI server, as the OpenAI API specifies.

A ``multipart/form-data`` body with ``file`` (its format known by the file name's
extension) and ``model``, optionally ``language``, ``prompt``, ``response_format``
(``json`` by default, or ``text``; ``verbose_json`` adds ``language`` and ``duration``)
and ``temperature``. The answer is the transcript a test set for the file's bytes
(``FakeOpenAI.transcripts``), or ``default_transcript``. Bad requests are refused as
OpenAI does: 400 with an ``invalid_request_error``, 413 above 25 MB.

A ``json`` or ``verbose_json`` answer carries ``usage`` as the API reference's
transcription object (the openai client's ``Transcription.usage``) does: models
billed by duration (``whisper-1``) report ``{"type": "duration", "seconds"}``,
the others (``gpt-4o-transcribe``, ``gpt-4o-mini-transcribe``) report
``{"type": "tokens", "input_tokens", "input_token_details": {"text_tokens",
"audio_tokens"}, "output_tokens", "total_tokens"}``. The audio lasts
``FakeOpenAI.transcription_seconds`` to the fake; ``FakeOpenAI.transcription_usage``
replaces the usage; with ``FakeOpenAI.reports_usage`` False there is none (as some
OpenAI-compatible servers answer).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import BodyPartReader, web

if TYPE_CHECKING:
    from tests.fakes.openai_server import FakeOpenAI

SUPPORTED_FORMATS = ("flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm")
MAX_AUDIO_BYTES = 25 * 1024 * 1024
DURATION_BILLED = ("whisper-1",)
"""Models whose usage is their audio's length (the others report tokens)."""
AUDIO_TOKENS_PER_SECOND = 10
"""Audio input tokens a second of audio is billed as by the token-billed models."""


def usage_of(model: str, text: str, seconds: float, prompt: str) -> dict[str, Any]:
    """The ``usage`` of a transcription, in the shape the model's billing reports it."""
    if model in DURATION_BILLED:
        return {"type": "duration", "seconds": math.ceil(seconds)}
    audio = math.ceil(seconds * AUDIO_TOKENS_PER_SECOND)
    prompt_tokens = math.ceil(len(prompt) / 4)
    output = max(1, math.ceil(len(text) / 4))
    return {
        "type": "tokens",
        "input_tokens": audio + prompt_tokens,
        "input_token_details": {"text_tokens": prompt_tokens, "audio_tokens": audio},
        "output_tokens": output,
        "total_tokens": audio + prompt_tokens + output,
    }


@dataclass(frozen=True)
class TranscriptionRequest:
    """What one ``/v1/audio/transcriptions`` request sent."""

    model: str
    filename: str
    data: bytes
    fields: dict[str, str]


async def transcriptions(server: FakeOpenAI, request: web.Request) -> web.Response:
    denied = server._check_auth(request)
    if denied is not None:
        return denied
    if not request.content_type.startswith("multipart/"):
        return server._json_error(400, "Expected a multipart/form-data body.")
    fields: dict[str, str] = {}
    filename, data = "", b""
    reader = await request.multipart()
    while (part := await reader.next()) is not None:
        if not isinstance(part, BodyPartReader) or part.name is None:
            continue
        if part.name == "file":
            filename, data = part.filename or "", bytes(await part.read())
        else:
            fields[part.name] = await part.text()
    server.transcription_requests.append(
        TranscriptionRequest(fields.get("model", ""), filename, data, fields)
    )
    if not fields.get("model"):
        return server._json_error(400, "you must provide a model parameter", param="model")
    if not data:
        return server._json_error(400, "you must provide a file parameter", param="file")
    if len(data) > MAX_AUDIO_BYTES:
        return server._json_error(413, "Maximum content size limit (26214400) exceeded.")
    suffix = filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
    if suffix not in SUPPORTED_FORMATS:
        formats = ", ".join(repr(f) for f in SUPPORTED_FORMATS)
        return server._json_error(
            400, f"Invalid file format. Supported formats: [{formats}]", param="file"
        )
    with server._lock:
        failure = (
            server._transcription_failures.popleft() if server._transcription_failures else None
        )
    if failure is not None:
        return server._json_error(failure, "The server had an error processing your request.")
    text = server.transcripts.get(data, server.default_transcript)
    response_format = fields.get("response_format", "json")
    if response_format == "text":
        return web.Response(text=text, headers=server._headers())
    if response_format not in ("json", "verbose_json"):
        return server._json_error(
            400,
            f"response_format {response_format!r} is not supported here",
            param="response_format",
        )
    seconds = server.transcription_seconds
    body: dict[str, object] = {"text": text}
    if response_format == "verbose_json":
        body |= {"task": "transcribe", "language": "english", "duration": seconds, "segments": []}
    if server.reports_usage:
        model = fields["model"]
        usage = server.transcription_usage or usage_of(
            model, text, seconds, fields.get("prompt", "")
        )
        body["usage"] = usage
    return web.json_response(body, headers=server._headers())

"""``POST /v1/audio/transcriptions`` of the fake OpenAI server, as the OpenAI API specifies.

A ``multipart/form-data`` body with ``file`` (its format known by the file name's
extension) and ``model``, optionally ``language``, ``prompt``, ``response_format``
(``json`` by default, or ``text``; ``verbose_json`` adds ``language`` and ``duration``)
and ``temperature``. The answer is the transcript a test set for the file's bytes
(``FakeOpenAI.transcripts``), or ``default_transcript``. Bad requests are refused as
OpenAI does: 400 with an ``invalid_request_error``, 413 above 25 MB.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiohttp import BodyPartReader, web

if TYPE_CHECKING:
    from tests.fakes.openai_server import FakeOpenAI

SUPPORTED_FORMATS = ("flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "oga", "ogg", "wav", "webm")
MAX_AUDIO_BYTES = 25 * 1024 * 1024


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
    body: dict[str, object] = {"text": text}
    if response_format == "verbose_json":
        body |= {"task": "transcribe", "language": "english", "duration": 1.0, "segments": []}
    return web.json_response(body, headers=server._headers())

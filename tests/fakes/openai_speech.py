"""``POST /v1/audio/speech`` of the fake OpenAI server, as the OpenAI API specifies.

A JSON body with ``model``, ``input`` (at most 4,096 characters) and ``voice``
(required), optionally ``instructions``, ``response_format`` (``mp3`` by default,
or ``opus``, ``aac``, ``flac``, ``wav``, ``pcm``), ``speed`` (0.25 to 4.0) and
``stream_format`` (``audio``). The answer is the audio file itself, no JSON and
no usage: for ``opus`` a real Ogg Opus stream (``OpusHead``, ``OpusTags`` and one
page of packets, each page with its CRC) whose granule position says how long
the text takes to say (``SPOKEN_CHARS_PER_SECOND``, over ``speed``); for the other
formats bytes that start as such files do. Bad requests are refused as OpenAI
does: 400 with an ``invalid_request_error`` naming the parameter.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web

if TYPE_CHECKING:
    from tests.fakes.openai_server import FakeOpenAI

MAX_INPUT_CHARS = 4096
FORMATS = {
    "mp3": "audio/mpeg",
    "opus": "audio/ogg",
    "aac": "audio/aac",
    "flac": "audio/flac",
    "wav": "audio/wav",
    "pcm": "audio/pcm",
}
SPOKEN_CHARS_PER_SECOND = 15
OPUS_RATE = 48_000
PRE_SKIP = 312


@dataclass(frozen=True)
class SpeechRequest:
    """What one ``/v1/audio/speech`` request sent."""

    model: str
    input: str
    voice: str
    response_format: str
    body: dict[str, Any]


def _crc_table() -> list[int]:
    table = []
    for i in range(256):
        r = i << 24
        for _ in range(8):
            r = ((r << 1) ^ 0x04C11DB7) if r & 0x80000000 else (r << 1)
        table.append(r & 0xFFFFFFFF)
    return table


_CRC = _crc_table()


def ogg_crc(data: bytes) -> int:
    """Ogg's page checksum (CRC-32, polynomial 0x04C11DB7, no reflection)."""
    crc = 0
    for byte in data:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _CRC[((crc >> 24) & 0xFF) ^ byte]
    return crc


def _page(packets: list[bytes], *, kind: int, granule: int, sequence: int) -> bytes:
    lacing = b""
    for packet in packets:
        lacing += b"\xff" * (len(packet) // 255) + bytes([len(packet) % 255])
    head = struct.pack(
        "<4sBBqIIIB", b"OggS", 0, kind, granule, 0x43484F52, sequence, 0, len(lacing)
    )
    page = head + lacing + b"".join(packets)
    return page[:22] + struct.pack("<I", ogg_crc(page)) + page[26:]


def ogg_opus(text: str, seconds: float) -> bytes:
    """An Ogg Opus stream of ``seconds`` (its packets are the text's digest, not sound)."""
    head = b"OpusHead" + struct.pack("<BBHIhB", 1, 1, PRE_SKIP, 24_000, 0, 0)
    vendor = b"fake-openai"
    tags = b"OpusTags" + struct.pack("<I", len(vendor)) + vendor + struct.pack("<I", 0)
    digest = hashlib.sha256(text.encode()).digest()
    frames = min(50, max(1, math.ceil(seconds / 0.02)))  # one page holds them all
    packets = [bytes([0xFC]) + digest for _ in range(frames)]
    granule = PRE_SKIP + round(seconds * OPUS_RATE)
    return (
        _page([head], kind=0x02, granule=0, sequence=0)
        + _page([tags], kind=0x00, granule=0, sequence=1)
        + _page(packets, kind=0x04, granule=granule, sequence=2)
    )


def ogg_seconds(data: bytes) -> float:
    """How long an Ogg Opus stream lasts: its last page's granule position, less pre-skip."""
    last = data.rfind(b"OggS")
    granule = struct.unpack_from("<q", data, last + 6)[0]
    skip = struct.unpack_from("<H", data, data.find(b"OpusHead") + 10)[0]
    return float(granule - skip) / OPUS_RATE


def audio_of(fmt: str, text: str, seconds: float) -> bytes:
    if fmt == "opus":
        return ogg_opus(text, seconds)
    digest = hashlib.sha256(text.encode()).digest()
    starts = {
        "mp3": b"ID3\x04\x00\x00\x00\x00\x00\x00",
        "aac": b"\xff\xf1\x50\x80",
        "flac": b"fLaC",
        "wav": b"RIFF\x00\x00\x00\x00WAVEfmt ",
        "pcm": b"",
    }
    return starts[fmt] + digest


async def speech(server: FakeOpenAI, request: web.Request) -> web.Response:
    denied = server._check_auth(request)
    if denied is not None:
        return denied
    try:
        body = json.loads(await request.read())
    except ValueError:
        return server._json_error(400, "We could not parse the JSON body of your request.")
    if not isinstance(body, dict):
        return server._json_error(400, "The body must be a JSON object.")
    model, text, voice = body.get("model"), body.get("input"), body.get("voice")
    fmt = body.get("response_format", "mp3")
    server.speech_requests.append(
        SpeechRequest(str(model or ""), str(text or ""), str(voice or ""), str(fmt), body)
    )
    for name, value in (("model", model), ("input", text), ("voice", voice)):
        if not value:
            return server._json_error(400, f"Missing required parameter: '{name}'.", param=name)
    assert isinstance(text, str)
    if len(text) > MAX_INPUT_CHARS:
        return server._json_error(
            400,
            f"'input' is too long: at most {MAX_INPUT_CHARS} characters are allowed.",
            param="input",
        )
    if fmt not in FORMATS:
        return server._json_error(
            400,
            f"Invalid value: '{fmt}'. Supported values are: {', '.join(FORMATS)}.",
            param="response_format",
        )
    speed = body.get("speed", 1.0)
    if not isinstance(speed, int | float) or not 0.25 <= speed <= 4.0:
        return server._json_error(400, "speed must be between 0.25 and 4.0.", param="speed")
    with server._lock:
        failure = server._speech_failures.popleft() if server._speech_failures else None
    if failure is not None:
        return server._json_error(failure, "The server had an error processing your request.")
    seconds = max(0.5, len(text) / SPOKEN_CHARS_PER_SECOND) / float(speed)
    return web.Response(
        body=audio_of(fmt, text, seconds),
        content_type=FORMATS[fmt],
        headers=server._headers(),
    )

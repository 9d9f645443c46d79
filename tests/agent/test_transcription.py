"""``LLMClient.transcribe`` against the fake transcription endpoint, with the real openai client."""

from __future__ import annotations

import pytest

from agent.errors import LLMRequestError, LLMUnavailable
from agent.llm import LLMClient
from agent.settings import LLMSettings
from tests.fakes import FakeOpenAI


async def test_the_words_come_back_and_the_file_goes_as_multipart(server: FakeOpenAI) -> None:
    server.transcripts[b"OggS voice"] = "see you at noon"
    client = LLMClient(LLMSettings(base_url=server.base_url, api_key=None))
    try:
        words = await client.transcribe(b"OggS voice", filename="voice.ogg", model="whisper-1")
    finally:
        await client.aclose()
    assert words == "see you at noon"
    [sent] = server.transcription_requests
    assert (sent.model, sent.filename, sent.data) == ("whisper-1", "voice.ogg", b"OggS voice")
    assert sent.fields["response_format"] == "json"


async def test_a_refused_file_and_a_failing_endpoint_are_told_apart(server: FakeOpenAI) -> None:
    client = LLMClient(LLMSettings(base_url=server.base_url, api_key=None))
    try:
        with pytest.raises(LLMRequestError, match="HTTP 400"):
            await client.transcribe(b"data", filename="voice.xyz", model="whisper-1")
        server.transcription_error(503)
        with pytest.raises(LLMUnavailable, match="HTTP 503"):
            await client.transcribe(b"data", filename="voice.ogg", model="whisper-1")
    finally:
        await client.aclose()

"""``LLMClient.transcribe`` against the fake transcription endpoint, with the real openai client."""

from __future__ import annotations

import openai
import pytest
from openai.types.audio.transcription import UsageDuration, UsageTokens

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


async def test_the_usage_the_fake_reports_is_what_the_openai_client_reads(
    server: FakeOpenAI,
) -> None:
    """The fake answers in the shapes of the official client's ``Transcription.usage``."""
    server.transcription_seconds = 3.2
    client = openai.AsyncOpenAI(api_key="k", base_url=server.base_url, max_retries=0)
    try:
        tokens = await client.audio.transcriptions.create(
            model="gpt-4o-transcribe", file=("a.ogg", b"OggS a"), response_format="json"
        )
        duration = await client.audio.transcriptions.create(
            model="whisper-1", file=("a.ogg", b"OggS a"), response_format="json"
        )
    finally:
        await client.close()
    assert isinstance(tokens.usage, UsageTokens)
    assert (tokens.usage.input_tokens, tokens.usage.output_tokens) == (32, 2)
    assert tokens.usage.input_token_details is not None
    assert tokens.usage.input_token_details.audio_tokens == 32
    assert isinstance(duration.usage, UsageDuration) and duration.usage.seconds == 4

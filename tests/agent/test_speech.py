"""``LLMClient.speak`` against the fake ``/v1/audio/speech``, with the real openai client."""

from __future__ import annotations

import openai
import pytest

from agent.errors import BudgetExhausted, LLMRequestError, LLMUnavailable
from agent.llm import LLMClient
from agent.settings import LLMSettings
from agent.speech import speech_usage
from agent.usage import Charge
from tests.fakes import FakeOpenAI
from tests.fakes.openai_speech import ogg_crc, ogg_seconds


class Meter:
    """A ``UsageMeter`` that keeps what it was told (and may refuse)."""

    def __init__(self, refuse: bool = False) -> None:
        self.refuse = refuse
        self.held: list[tuple[Charge, str, int]] = []
        self.settled: list[tuple[str, tuple[int, int, int], bool]] = []
        self.released = 0

    async def reserve(self, charge: Charge, model: str, estimate: int) -> object:
        if self.refuse:
            raise BudgetExhausted("spent")
        self.held.append((charge, model, estimate))
        return len(self.held)

    async def settle(
        self, hold: object, model: str, usage: tuple[int, int, int], *, estimated: bool
    ) -> None:
        self.settled.append((model, usage, estimated))

    async def release(self, hold: object) -> None:
        self.released += 1


async def test_the_audio_comes_back_as_ogg_opus_and_is_charged_as_an_estimate(
    server: FakeOpenAI,
) -> None:
    meter = Meter()
    client = LLMClient(LLMSettings(base_url=server.base_url, api_key=None), meter=meter)
    charge = Charge("telegram:1", "s1", "speech", "telegram:1")
    text = "The meeting moved to Thursday at ten."
    try:
        audio = await client.speak(text, model="gpt-4o-mini-tts", voice="nova", charge=charge)
    finally:
        await client.aclose()
    [sent] = server.speech_requests
    assert sent.body == {
        "model": "gpt-4o-mini-tts",
        "voice": "nova",
        "input": text,
        "response_format": "opus",
    }
    assert audio.startswith(b"OggS") and abs(ogg_seconds(audio) - len(text) / 15) < 0.01
    usage = speech_usage(text)
    assert usage == (10, 0, 50)  # 37 characters: 10 tokens read, 2.5 s of speech
    assert meter.held == [(charge, "gpt-4o-mini-tts", 60)]
    assert meter.settled == [("gpt-4o-mini-tts", usage, True)]


async def test_a_refused_request_and_a_failing_endpoint_are_told_apart(server: FakeOpenAI) -> None:
    meter = Meter()
    client = LLMClient(LLMSettings(base_url=server.base_url, api_key=None), meter=meter)
    charge = Charge("telegram:1", None, "speech")
    try:
        with pytest.raises(LLMRequestError, match="speech: HTTP 400"):
            await client.speak("x" * 4097, model="tts-1", voice="alloy", charge=charge)
        server.speech_error(503)
        with pytest.raises(LLMUnavailable, match="speech: HTTP 503"):
            await client.speak("hello", model="tts-1", voice="alloy", charge=charge)
    finally:
        await client.aclose()
    assert meter.released == 2 and meter.settled == []


async def test_a_spent_budget_asks_nothing_of_the_endpoint(server: FakeOpenAI) -> None:
    client = LLMClient(LLMSettings(base_url=server.base_url, api_key=None), meter=Meter(True))
    try:
        with pytest.raises(BudgetExhausted):
            await client.speak("hi", model="tts-1", voice="alloy", charge=Charge("a:1", None))
    finally:
        await client.aclose()
    assert server.speech_requests == []


async def test_the_fake_answers_as_the_api_does(server: FakeOpenAI) -> None:
    """Its audio is what the official client hands back; its Ogg pages carry right CRCs."""
    client = openai.AsyncOpenAI(api_key="k", base_url=server.base_url, max_retries=0)
    try:
        mp3 = await client.audio.speech.create(model="tts-1", voice="alloy", input="hi")
        opus = await client.audio.speech.create(
            model="tts-1", voice="alloy", input="hello there", response_format="opus", speed=2.0
        )
        with pytest.raises(openai.BadRequestError):
            await client.audio.speech.create(model="tts-1", voice="", input="hi")
    finally:
        await client.close()
    assert mp3.content.startswith(b"ID3") and mp3.response.headers["content-type"] == "audio/mpeg"
    data = opus.content
    assert opus.response.headers["content-type"] == "audio/ogg"
    pages = [data.index(b"OggS", i) for i in (0, 1, data.index(b"OpusTags"))]
    for start, end in zip(pages, [*pages[1:], len(data)], strict=True):
        page = data[start:end]
        zeroed = page[:22] + b"\0\0\0\0" + page[26:]
        assert int.from_bytes(page[22:26], "little") == ogg_crc(zeroed)
    assert abs(ogg_seconds(data) - 11 / 15 / 2) < 0.01

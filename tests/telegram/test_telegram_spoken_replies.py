"""Spoken replies on Telegram: ``/voice on|off``, ``sendVoice``, the ledger and what may fail."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from memory.usage_ledger import LedgerRow, UsageLedger
from tests.fakes.openai_speech import ogg_seconds
from tests.telegram.conftest import ANN, BOB, GROUP, GatewayFactory, TelegramGateway
from tests.waiting import spoken_replies

SPEECH = {"CHORUS_LLM__SPEECH_MODEL": "gpt-4o-mini-tts"}


async def _done(gw: TelegramGateway, answers: int) -> None:
    await spoken_replies(gw.stack, answers)


async def _rows(gw: TelegramGateway, person: str, purpose: str) -> list[LedgerRow]:
    with UsageLedger(gw.stack.settings.home / "state.db") as ledger:
        for _ in range(200):
            rows = [r for r in ledger.rows(person) if r.purpose == purpose]
            if rows:
                return rows
            await asyncio.sleep(0.02)
    raise AssertionError(f"no {purpose} row of {person}")


async def _say(gw: TelegramGateway, text: str, user: int, count: int) -> str:
    gw.telegram.message(text, user_id=user)
    messages = await gw.telegram.wait_messages(user, count)
    return messages[count - 1].text


async def test_voice_on_sends_each_answer_as_a_voice_message_too_charged_to_the_person(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    chorus_home.mkdir(mode=0o700, exist_ok=True)
    pricing = {"gpt-4o-mini-tts": {"input": 0.6, "output": 12.0}}
    (chorus_home / "config.yaml").write_text(json.dumps({"llm": {"pricing": pricing}}))
    gw = await make_gateway(**SPEECH, CHORUS_LLM__SPEECH_VOICE="coral")
    tg, llm = gw.telegram, gw.server

    assert "Spoken replies are off." in await _say(gw, "/voice", ANN, 1)
    assert "will also come as a voice message" in await _say(gw, "/voice on", ANN, 2)
    assert "Spoken replies are on" in await _say(gw, "/voice", ANN, 3)

    llm.reply("**Paris** is the capital of [France](https://fr.example).")
    text = await _say(gw, "what is the capital of France?", ANN, 4)
    assert text == "Paris is the capital of France."  # the text answer, as ever
    await tg.wait_for(lambda: len(tg.voices) == 1, 15, "a voice message")
    [voice] = tg.voices
    assert voice.chat_id == ANN and voice.mime_type == "audio/ogg"
    assert voice.reply_to is None  # a direct chat: no quote
    [asked] = llm.speech_requests
    assert asked.input == "Paris is the capital of France."  # the words, not the Markdown
    assert (asked.model, asked.voice, asked.response_format) == ("gpt-4o-mini-tts", "coral", "opus")
    assert voice.data.startswith(b"OggS") and b"OpusHead" in voice.data
    assert ogg_seconds(voice.data) > 1.0  # the audio the endpoint made, as it was sent
    assert voice.duration == round(ogg_seconds(voice.data)) == 2  # the length it shows

    [row] = await _rows(gw, f"telegram:{ANN}", "speech")
    [turn] = await _rows(gw, f"telegram:{ANN}", "turn")
    assert row.model == "gpt-4o-mini-tts" and row.estimated  # the endpoint reports no usage
    assert row.session_id == turn.session_id
    assert (row.input_tokens, row.output_tokens) == (8, 42)  # 31 characters: 2.07 s of speech
    assert row.cost is not None and abs(row.cost - (8 * 0.6 + 42 * 12.0) / 1e6) < 1e-12
    assert gw.stack.meter is not None
    status = await gw.stack.meter.status(f"telegram:{ANN}")
    assert status.spent_day.tokens == turn.tokens + row.tokens

    llm.reply("Bob's answer.")  # Bob never asked for voice
    assert await _say(gw, "hello", BOB, 1) == "Bob's answer."
    assert "Spoken replies are off" in await _say(gw, "/voice off", ANN, 5)
    llm.reply("Text only now.")
    assert await _say(gw, "and now?", ANN, 6) == "Text only now."
    await _done(gw, 3)
    assert len(llm.speech_requests) == 1 and len(tg.voices) == 1


async def test_a_voice_reply_in_a_group_answers_the_message_it_replies_to(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(**SPEECH)
    tg, llm = gw.telegram, gw.server
    await _say(gw, "/voice on", ANN, 1)
    llm.reply("Hello, group.")
    asked = tg.message(f"@{tg.username} hi", user_id=ANN, chat_id=GROUP)
    await tg.wait_messages(GROUP, 1)
    await tg.wait_for(lambda: len(tg.voices) == 1, 15, "a voice message")
    assert tg.voices[0].chat_id == GROUP
    assert tg.voices[0].reply_to == asked["message"]["message_id"]


async def test_without_a_speech_model_voice_says_spoken_replies_are_off_here(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    llm = gw.server
    for count, command in enumerate(("/voice", "/voice on"), start=1):
        said = await _say(gw, command, ANN, count)
        assert said == "Spoken replies are off on this chorus (no speech model is configured)."
    llm.reply("Plain.")
    assert await _say(gw, "hi", ANN, 3) == "Plain."
    await _done(gw, 1)
    assert not llm.speech_requests and not gw.telegram.voices


async def test_voice_with_something_else_says_how_to_use_it(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway(**SPEECH)
    assert (await _say(gw, "/voice loud", ANN, 1)).startswith("Usage: /voice on, /voice off")


async def test_help_lists_voice(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway(**SPEECH)
    assert "/voice — spoken replies" in await _say(gw, "/help", ANN, 1)


async def test_speech_failures_never_lose_the_text_answer(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    gw = await make_gateway(**SPEECH, CHORUS_MEDIA__MAX_SPOKEN_CHARS="40")
    tg, llm = gw.telegram, gw.server
    await _say(gw, "/voice on", ANN, 1)

    llm.speech_error(500)  # the endpoint fails
    llm.reply("First answer.")
    assert await _say(gw, "one", ANN, 2) == "First answer."
    await _done(gw, 1)
    assert len(llm.speech_requests) == 1 and not tg.voices
    assert "an answer could not be read out (speech: HTTP 500)" in caplog.text

    tg.voice_forbidden.add(ANN)  # Telegram refuses the voice message
    llm.reply("Second answer.")
    assert await _say(gw, "two", ANN, 3) == "Second answer."
    await _done(gw, 2)
    assert len(llm.speech_requests) == 2 and not tg.voices
    assert "voice_messages_forbidden" in caplog.text.lower()
    tg.voice_forbidden.clear()

    long = "This answer is far too long to be read out here."
    llm.reply(long)  # over media.max_spoken_chars: not even asked for
    assert await _say(gw, "three", ANN, 4) == long
    await _done(gw, 3)
    assert len(llm.speech_requests) == 2
    assert "over media.max_spoken_chars (40)" in caplog.text

    llm.reply("Fine again.")
    assert await _say(gw, "four", ANN, 5) == "Fine again."
    await tg.wait_for(lambda: len(tg.voices) == 1, 15, "a voice message")
    assert llm.speech_requests[-1].input == "Fine again."
    assert "Fine again" not in caplog.text  # no answer text above DEBUG


async def test_a_person_whose_budget_is_spent_gets_no_voice_but_the_text(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(**SPEECH, CHORUS_BUDGETS__USER__TOKENS_PER_DAY="100000")
    tg, llm = gw.telegram, gw.server
    assert "voice message" in await _say(gw, "/voice on", ANN, 1)
    # the turn itself spends the day's tokens: the speech call is refused, not the answer
    llm.reply("Costly.", usage={"prompt_tokens": 99_990, "completion_tokens": 10})
    assert (await _say(gw, "hi", ANN, 2)).startswith("Costly.")
    await _done(gw, 1)
    assert not llm.speech_requests and not tg.voices

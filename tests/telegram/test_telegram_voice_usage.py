"""A voice note's transcription in the usage ledger and the person's budget, on Telegram."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from memory.usage_ledger import LedgerRow, UsageLedger
from tests.telegram.conftest import ANN, BOB, GatewayFactory, TelegramGateway

VOICE = b"OggS fake opus voice note"
PRICING = {
    "gpt-4o-mini-transcribe": {"input": 1.25, "output": 5.0},
    "gpt-4o-mini": {"input": 0.15, "output": 0.6},
}


def voice(duration: int = 6) -> dict[str, object]:
    return {
        "file_id": "v1",
        "file_unique_id": "v1",
        "duration": duration,
        "mime_type": "audio/ogg",
        "file_size": len(VOICE),
    }


def _priced(home: Path) -> None:
    home.mkdir(mode=0o700, exist_ok=True)
    (home / "config.yaml").write_text(json.dumps({"llm": {"pricing": PRICING}}))


async def _rows(gw: TelegramGateway, person: str, purpose: str, n: int = 1) -> list[LedgerRow]:
    """The ledger's rows of ``person`` for ``purpose`` once there are ``n`` (written off
    the message's path)."""
    with UsageLedger(gw.stack.settings.home / "state.db") as ledger:
        for _ in range(200):
            rows = [r for r in ledger.rows(person) if r.purpose == purpose]
            if len(rows) >= n:
                return rows
            await asyncio.sleep(0.02)
    raise AssertionError(f"{n} {purpose} row(s) of {person} never came")


async def test_a_transcription_is_recorded_with_the_reported_tokens_cost_person_and_session(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    _priced(chorus_home)
    gw = await make_gateway(
        CHORUS_LLM__MODEL="gpt-4o-mini",
        CHORUS_LLM__TRANSCRIPTION_MODEL="gpt-4o-mini-transcribe",
    )
    tg, llm = gw.telegram, gw.server
    person = f"telegram:{ANN}"
    llm.reply("hello")
    tg.message("hi", user_id=ANN)
    await tg.wait_messages(ANN, 1)
    [turn] = await _rows(gw, person, "turn")

    tg.files["v1"] = VOICE
    llm.transcripts[VOICE] = "what is the capital of France"
    llm.transcription_seconds = 6.0
    llm.reply("Paris.")
    tg.message(None, user_id=ANN, voice=voice())
    await tg.wait_messages(ANN, 2)
    [row] = await _rows(gw, person, "transcription")
    # as the endpoint reported: 60 audio tokens, the 29 characters as 8 output tokens
    assert (row.model, row.input_tokens, row.cached_tokens, row.output_tokens) == (
        "gpt-4o-mini-transcribe",
        60,
        0,
        8,
    )
    assert not row.estimated
    assert row.session_id == turn.session_id  # the session the voice note went on in
    assert row.cost is not None and abs(row.cost - (60 * 1.25 + 8 * 5.0) / 1e6) < 1e-12
    turns = await _rows(gw, person, "turn", 2)
    status = await gw.stack.meter.status(person)  # the person's day counts it
    assert status.spent_day.tokens == sum(r.tokens for r in turns) + row.tokens


async def test_a_duration_billed_transcription_is_estimated_from_its_length(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    _priced(chorus_home)
    gw = await make_gateway(CHORUS_LLM__TRANSCRIPTION_MODEL="whisper-1")
    tg, llm = gw.telegram, gw.server
    tg.files["v1"] = VOICE
    llm.transcripts[VOICE] = "call me back"
    llm.transcription_seconds = 7.0  # whisper-1 reports {"type": "duration", "seconds": 7}
    llm.reply("Will do.")
    tg.message(None, user_id=BOB, voice=voice(duration=6))
    await tg.wait_messages(BOB, 1)
    [row] = await _rows(gw, f"telegram:{BOB}", "transcription")
    assert row.estimated and row.model == "whisper-1"
    assert (row.input_tokens, row.output_tokens) == (70, 3)  # 7 s of audio; 12 characters
    assert row.cost is None  # whisper-1 has no price here: tokens only
    assert row.session_id is None  # no session was open when it was heard


async def test_a_transcription_spends_the_budget_and_over_it_a_voice_note_is_refused_unheard(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(
        CHORUS_LLM__TRANSCRIPTION_MODEL="gpt-4o-mini-transcribe",
        CHORUS_BUDGETS__USER__TOKENS_PER_DAY="1000",
    )
    tg, llm = gw.telegram, gw.server
    tg.files["v1"] = VOICE
    llm.transcription_usage = {
        "type": "tokens",
        "input_tokens": 900,
        "input_token_details": {"text_tokens": 0, "audio_tokens": 900},
        "output_tokens": 150,
        "total_tokens": 1050,
    }
    tg.message(None, user_id=ANN, voice=voice())
    [first] = await tg.wait_messages(ANN, 1)
    assert "today's 1,000 tokens" in first.text and "resets on" in first.text
    assert len(llm.transcription_requests) == 1  # heard: the budget was not spent yet
    assert not llm.requests  # its 1,050 tokens spent it: the turn was not started

    tg.message("and another thing", user_id=ANN, voice=voice())
    [_, second] = await tg.wait_messages(ANN, 2)
    await asyncio.sleep(0.2)
    await gw.settle()
    assert "today's 1,000 tokens" in second.text
    assert len(llm.transcription_requests) == 1  # no request for the refused voice note
    assert not llm.requests  # and no turn for its text
    assert len(tg.in_chat(ANN)) == 2  # one refusal each
    [row] = await _rows(gw, f"telegram:{ANN}", "transcription")
    assert row.tokens == 1050


async def test_a_transcription_without_reported_usage_is_estimated_from_the_voice_notes_length(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(CHORUS_LLM__TRANSCRIPTION_MODEL="local-whisper")
    tg, llm = gw.telegram, gw.server
    llm.reports_usage = False  # as some OpenAI-compatible servers answer
    tg.files["v1"] = VOICE
    llm.transcripts[VOICE] = "see you at noon"
    llm.reply("See you.")
    tg.message(None, user_id=ANN, voice=voice(duration=6))
    await tg.wait_messages(ANN, 1)
    [row] = await _rows(gw, f"telegram:{ANN}", "transcription")
    assert row.estimated and row.model == "local-whisper"
    assert (row.input_tokens, row.output_tokens) == (60, 4)  # Telegram's 6 s; 15 characters

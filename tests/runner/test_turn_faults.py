"""A turn whose model connection fails or hangs: the person sees one clear outcome.

The fake endpoint drops the connection mid-answer (the body ends without its last
chunk, as when a proxy or the server dies: httpx ``RemoteProtocolError``) or holds
the first token back.
"""

from __future__ import annotations

import logging
import time

import pytest

from gateway import _texts as t
from tests.fakes import FakeOpenAI, Reply
from tests.runner.conftest import GatewayFactory


async def test_a_connection_dropped_before_any_word_is_retried(
    make_gateway: GatewayFactory, server: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    """Was: a generic "something went wrong" and a traceback in the log."""
    gw = await make_gateway()
    server.push(Reply.of_text("never seen", drop_after=1))
    server.reply("Lima.")
    answer = await gw.ask("capital of Peru?")
    assert answer.text == "Lima."
    await gw.settle()
    assert gw.adapter.texts("dm-2") == ["Lima."]
    assert "Traceback" not in caplog.text


async def test_a_connection_dropped_mid_answer_ends_the_shown_text_with_one_note(
    make_gateway: GatewayFactory, server: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    """Was: the half answer left frozen, plus a separate "something went wrong on my
    side" and a traceback in the log."""
    caplog.set_level(logging.INFO)
    gw = await make_gateway()
    server.stream_piece_delay = 0.05
    server.push(Reply.of_text("The capital of Peru is Lima, of course.", drop_after=5))
    await gw.say("capital of Peru?")
    await gw.settle()
    [shown] = gw.adapter.sent
    assert shown.text.startswith("The capital of Peru")
    assert shown.text.endswith(t.CUT_OFF_NOTE.strip())
    assert t.APOLOGY not in shown.text
    assert len(server.requests) == 1  # not asked again once words were shown
    assert "Traceback" not in caplog.text


async def test_a_hung_endpoint_meets_one_deadline_per_turn(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    """Was: 64 s of waiting at ``llm.timeout_seconds: 15`` (each retry its own timeout),
    about 8 minutes at the default 120 s, before any word."""
    gw = await make_gateway(CHORUS_LLM__TURN_TIMEOUT_SECONDS="2", CHORUS_LLM__TIMEOUT_SECONDS="1.5")
    server.push(*(Reply.of_text("too late", stall_after=0, stall=30) for _ in range(2)))
    started = time.monotonic()
    await gw.say("are you there?")
    note = await gw.adapter.pop(10)
    assert note.text == t.STILL_WORKING
    told = await gw.adapter.pop(10)
    assert told.text == t.LLM_UNREACHABLE
    assert time.monotonic() - started < 4
    await gw.settle()
    assert gw.adapter.texts("dm-2") == [t.STILL_WORKING, t.LLM_UNREACHABLE]
    server.reset()  # stalled answers not taken are not left for the session's end


async def test_a_late_first_word_brings_a_still_working_note(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    """Was: nothing but the typing indicator until the first word, however late."""
    gw = await make_gateway(CHORUS_LLM__TURN_TIMEOUT_SECONDS="8")
    server.push(Reply.of_text("Here it is.", stall_after=0, stall=3))
    await gw.say("slow question")
    note = await gw.adapter.pop(10)
    assert note.text == t.STILL_WORKING
    answer = await gw.adapter.pop(10)
    assert answer.text == "Here it is."
    await gw.settle()
    assert gw.adapter.texts("dm-2") == [t.STILL_WORKING, "Here it is."]

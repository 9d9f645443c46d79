"""The typing indicator of a turn goes out once the turn's request has left for the
model (in a burst, the first requests are not queued behind everyone's indicators);
a turn that cannot start (every answer slot taken) still shows it soon."""

from __future__ import annotations

import time
from typing import Any

import pytest

from gateway.adapters import _replies
from tests.fakes import Reply
from tests.telegram.conftest import ANN, BOB, GatewayFactory, user_texts

DELAY = 1.0
CHATS = {"first": ANN, "second": BOB}


def _arrivals(arrived: dict[str, float], delay: float) -> Any:
    def respond(body: dict[str, Any]) -> Reply:
        [text] = user_texts(body)[-1:]
        arrived.setdefault(text, time.monotonic())
        return Reply.of_text(f"re: {text}", delay=delay)

    return respond


async def _two_turns_one_slot(
    make_gateway: GatewayFactory, delay: float
) -> tuple[Any, str, dict[str, float]]:
    """Ann and Bob write at once to a gateway that writes one answer at a time; the
    text of the turn that waited for the slot, and when each request reached the model."""
    gw = await make_gateway(CHORUS_SESSIONS__MAX_CONCURRENT_TURNS="1")
    tg, llm = gw.telegram, gw.server
    arrived: dict[str, float] = {}
    llm.responder(_arrivals(arrived, delay))
    with tg.at_once():
        tg.message("first", user_id=ANN, first_name="Ann")
        tg.message("second", user_id=BOB, first_name="Bob")
    await tg.wait_messages(ANN, 1, timeout=60)
    await tg.wait_messages(BOB, 1, timeout=60)
    waited = max(arrived, key=lambda text: arrived[text])
    return tg, waited, arrived


def _first_typing(tg: Any, chat: int) -> float:
    return min(c.at for c in tg.calls_of("sendChatAction") if int(c.params["chat_id"]) == chat)


async def test_no_typing_indicator_before_the_turn_s_request_has_left(
    make_gateway: GatewayFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_replies, "TYPING_AFTER_AT_MOST", 30.0)
    tg, waited, arrived = await _two_turns_one_slot(make_gateway, DELAY)
    other = next(text for text in arrived if text != waited)
    # the waiting turn starts once the other's answer is back: DELAY after its arrival
    assert _first_typing(tg, CHATS[waited]) >= arrived[other] + DELAY


async def test_a_turn_waiting_for_a_slot_still_shows_typing_soon(
    make_gateway: GatewayFactory,
) -> None:
    tg, waited, arrived = await _two_turns_one_slot(make_gateway, _replies.TYPING_AFTER_AT_MOST * 6)
    assert _first_typing(tg, CHATS[waited]) < arrived[waited]

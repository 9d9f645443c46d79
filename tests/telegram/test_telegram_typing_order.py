"""The typing indicator of a turn goes out once the turn's request has left for the
model, so in a burst the first requests are not queued behind everyone's indicators;
a turn that cannot start (every answer slot taken) still shows it soon."""

from __future__ import annotations

import time
from typing import Any

from gateway.adapters._replies import TYPING_AFTER_AT_MOST
from tests.fakes import Reply
from tests.telegram.conftest import GatewayFactory, user_texts

PEOPLE = 12


def _arrivals(arrived: dict[str, float], delay: float) -> Any:
    def respond(body: dict[str, Any]) -> Reply:
        [text] = user_texts(body)[-1:]
        arrived.setdefault(text, time.monotonic())
        return Reply.of_text(f"re: {text}", delay=delay)

    return respond


async def test_in_a_burst_each_typing_indicator_follows_its_own_request(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(CHORUS_AUTH__POLICY="open")
    tg, llm = gw.telegram, gw.server
    arrived: dict[str, float] = {}
    llm.responder(_arrivals(arrived, delay=1.0))
    for n in range(PEOPLE):
        tg.message(f"hello {n}", user_id=5000 + n, first_name=f"P{n}")
    for n in range(PEOPLE):
        await tg.wait_messages(5000 + n, 1, timeout=60)
    typed = {int(c.params["chat_id"]): c.at for c in reversed(tg.calls_of("sendChatAction"))}
    assert typed  # indicators were shown
    for chat, at in typed.items():
        assert at >= arrived[f"hello {chat - 5000}"], chat


async def test_a_turn_waiting_for_a_slot_shows_typing_before_its_request(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(CHORUS_SESSIONS__MAX_CONCURRENT_TURNS="1")
    tg, llm = gw.telegram, gw.server
    arrived: dict[str, float] = {}
    llm.responder(_arrivals(arrived, delay=TYPING_AFTER_AT_MOST * 6))
    tg.message("first", user_id=1001, first_name="Ann")
    tg.message("second", user_id=1002, first_name="Bob")
    await tg.wait_messages(1001, 1, timeout=60)
    await tg.wait_messages(1002, 1, timeout=60)
    waited = max(arrived, key=lambda text: arrived[text])  # the turn that had no slot
    chat = {"first": 1001, "second": 1002}[waited]
    typed = min(c.at for c in tg.calls_of("sendChatAction") if int(c.params["chat_id"]) == chat)
    assert typed < arrived[waited]

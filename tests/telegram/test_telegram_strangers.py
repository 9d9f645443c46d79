"""A crowd of strangers against the bot's send budget, through the fake Bot API."""

from __future__ import annotations

import asyncio
import contextlib

from tests.fakes import FakeClock, JumpClock
from tests.telegram.conftest import ANN, GatewayFactory
from tests.waiting import until

STRANGERS = 200
FIRST_STRANGER = 50_000
BURST = 30
"""Messages Telegram lets a bot send at once before its overall pace applies."""


async def test_an_answer_goes_out_before_the_stranger_notices_queued_ahead_of_it(
    make_gateway: GatewayFactory,
) -> None:
    clock = FakeClock()  # the send budget refills only when the test moves the clock
    gw = await make_gateway(clock=clock, CHORUS_AUTH__STRANGER_NOTICES_PER_MINUTE="1000")
    tg, llm = gw.telegram, gw.server
    llm.reply("Here you are, Ann.")
    strangers = {FIRST_STRANGER + n for n in range(STRANGERS)}
    with tg.at_once():
        for user in sorted(strangers):
            tg.message("hello?", user_id=user, first_name="Stranger")
        tg.message("a question", user_id=ANN)

    def sends() -> list[int]:
        return [int(c.params["chat_id"]) for c in tg.calls_of("sendMessage")]

    # every stranger's notice is on its way before Ann's answer is written: the
    # budget's burst is spent on the first of them and the rest wait for it
    await tg.wait_for(lambda: len(llm.requests) == 1, what="Ann's question at the model")
    await tg.wait_for(lambda: len(sends()) >= BURST, what="the first notices")
    # then the answer waits for the budget too (beside the first notice still waiting)
    with contextlib.suppress(AssertionError):
        await until(lambda: clock.sleepers >= 2, 10)
    assert len(sends()) == BURST and ANN not in sends()

    while ANN not in sends() or len(sends()) < STRANGERS + 1:
        await clock.advance(1 / BURST)
        await asyncio.sleep(0.005)
    order = sends()
    assert set(order) == strangers | {ANN} and len(order) == STRANGERS + 1
    waited = order.index(ANN) - BURST
    assert waited <= 1, f"the answer waited for {waited} notices to strangers"
    assert [m.text for m in tg.in_chat(ANN)] == ["Here you are, Ann."]


async def test_strangers_get_at_most_the_cap_of_notices_a_minute(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(clock=JumpClock())  # the default cap: 20 a minute
    tg, llm = gw.telegram, gw.server
    llm.reply("Here you are, Ann.")
    strangers = {FIRST_STRANGER + n for n in range(STRANGERS)}
    with tg.at_once():
        for user in sorted(strangers):
            tg.message("hello?", user_id=user, first_name="Stranger")
        tg.message("a question", user_id=ANN)

    def told() -> list[int]:
        return [int(c.params["chat_id"]) for c in tg.calls_of("sendMessage")]

    await tg.wait_messages(ANN, 1)
    await tg.wait_for(lambda: len(set(told()) & strangers) >= 20, what="notices to strangers")
    await asyncio.sleep(1.0)  # the rest of the crowd has been handled meanwhile
    await gw.settle()
    assert len([chat for chat in told() if chat in strangers]) == 20
    assert told().count(ANN) == 1


async def test_a_flood_block_on_one_strangers_chat_holds_up_no_other_notice(
    make_gateway: GatewayFactory,
) -> None:
    clock = FakeClock()
    gw = await make_gateway(clock=clock)
    tg = gw.telegram
    tg.flood(1, retry_after=30, methods=("sendMessage",))
    blocked = FIRST_STRANGER
    tg.message("hello?", user_id=blocked, first_name="Stranger")
    await tg.wait_for(lambda: tg.calls_of("sendMessage", status=429), what="the 429")
    others = {FIRST_STRANGER + 1 + n for n in range(4)}
    for user in sorted(others):
        tg.message("hello?", user_id=user, first_name="Stranger")

    def told() -> set[int]:
        return {int(c.params["chat_id"]) for c in tg.calls_of("sendMessage")}

    await tg.wait_for(lambda: told() == others, what="the other notices, with the clock still")
    await clock.advance(30)
    await tg.wait_for(lambda: told() == others | {blocked}, what="the blocked chat's notice")

"""``/start``: the first message of everyone who opens the bot, deep links included."""

from __future__ import annotations

import re

from tests.telegram.conftest import ADMIN, ANN, GatewayFactory

STRANGER = 1999
CODE = re.compile(r"\b([A-HJ-NP-Z2-9]{8})\b")


async def test_start_greets_an_allowed_user_with_or_without_a_deep_link(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    tg = gw.telegram
    tg.message("/start", user_id=ANN)
    tg.message("/start ref-campaign_42", user_id=ANN)  # t.me/chorus_test_bot?start=ref-campaign_42
    first, second = await tg.wait_messages(ANN, 2)
    assert first.text.startswith("Hi!") and "/help" in first.text
    assert "Unknown command" not in first.text
    assert second.text == first.text
    await gw.settle()
    assert not gw.server.requests


async def test_start_greets_a_stranger_and_says_the_bot_is_private(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    tg = gw.telegram
    tg.message("/start", user_id=STRANGER)
    [reply] = await tg.wait_messages(STRANGER, 1)
    assert reply.text.startswith("Hi!")
    assert f"your id is telegram:{STRANGER}" in reply.text
    assert "/help" not in reply.text  # they cannot use it yet
    await gw.settle()
    assert not gw.server.requests


async def test_start_under_pairing_greets_a_stranger_with_their_pairing_code(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(CHORUS_AUTH__POLICY="pairing")
    tg = gw.telegram
    tg.message("/start invite-7", user_id=STRANGER)
    [greeting] = await tg.wait_messages(STRANGER, 1)
    assert greeting.text.startswith("Hi!")
    code = CODE.search(greeting.text.split("pairing code", 1)[-1])
    assert code is not None, greeting.text
    assert "expires in 60 minutes" in greeting.text

    tg.message(f"/admin approve {code.group(1)}", user_id=ADMIN)
    await tg.wait_for(
        lambda: any(f"Approved telegram:{STRANGER}" in m.text for m in tg.in_chat(ADMIN)),
        what="the approval",
    )
    tg.message("/start", user_id=STRANGER)  # now a user like any other
    await tg.wait_for(
        lambda: any("/help" in m.text for m in tg.in_chat(STRANGER)), what="the greeting"
    )
    await gw.settle()
    assert not gw.server.requests


async def test_start_is_in_the_telegram_menu(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    everyone = {c["command"]: c["description"] for c in gw.telegram.commands["all_private_chats"]}
    assert everyone.get("start")


async def test_start_gives_a_denied_user_no_greeting(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    tg = gw.telegram
    tg.message(f"/admin deny telegram:{ANN}", user_id=ADMIN)
    [denied] = await tg.wait_messages(ADMIN, 1)
    assert denied.text.startswith(f"Denied telegram:{ANN}")
    tg.message("/start", user_id=ANN)
    [reply] = await tg.wait_messages(ANN, 1)
    assert reply.text == "You are not allowed to use this bot."

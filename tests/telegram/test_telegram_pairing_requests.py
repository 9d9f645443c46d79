"""Admins are told of a stranger's pairing request on Telegram, with an inline keyboard:
**Approve** / **Deny** run ``/admin approve #ID`` / ``/admin deny #ID`` from whoever
pressed, admins only, audited; the card loses its keyboard and shows the decision, the
person is told, and a later press finds it decided. After a restart the buttons work."""

from __future__ import annotations

import copy
import re

from tests.fakes.telegram_api import BotMessage, FakeTelegram
from tests.telegram.conftest import ADMIN, ANN, GatewayFactory
from tests.waiting import until

STRANGER = 1003
PAIRING = {"CHORUS_AUTH__POLICY": "pairing"}


def _code(tg: FakeTelegram) -> str:
    notices = [m.text for m in tg.in_chat(STRANGER) if "pairing code" in m.text]
    found = re.search(r"admin: (\w{8})", notices[-1])
    assert found is not None, notices
    return found.group(1)


async def _card(tg: FakeTelegram, admin: int = ADMIN) -> BotMessage:
    await tg.wait_for(lambda: any(m.reply_markup for m in tg.in_chat(admin)), 15, "a card")
    return next(m for m in tg.in_chat(admin) if m.reply_markup)


def _buttons(card: BotMessage) -> list[tuple[str, str]]:
    rows = (card.reply_markup or {}).get("inline_keyboard", [])
    return [(b["text"], b["callback_data"]) for row in rows for b in row]


async def _answer(tg: FakeTelegram, query: str) -> str:
    await tg.wait_for(lambda: query in tg.callback_answers, 15, "the press answered")
    return str(tg.callback_answers[query].get("text") or "")


async def test_an_admin_approves_by_the_button_and_the_person_is_told_they_are_in(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(**PAIRING)
    tg, llm = gw.telegram, gw.server
    tg.started.add(ADMIN)
    tg.message("hello?", user_id=STRANGER, first_name="Zed")
    card = await _card(tg)
    code = _code(tg)
    ask = re.search(r"#(\w+)", card.text)
    assert ask is not None
    ask_id = ask.group(1)
    assert "Zed" in card.text and f"telegram:{STRANGER}" in card.text and code in card.text
    assert _buttons(card) == [
        ("Approve", f"/admin approve #{ask_id}"),
        ("Deny", f"/admin deny #{ask_id}"),
    ]

    tg.message("/pair", user_id=STRANGER, first_name="Zed")  # a new code within the hour
    await tg.wait_for(lambda: _code(tg) != code, 15, "a new code")
    stale = copy.deepcopy(card)

    anns = tg.press(card, f"/admin approve #{ask_id}", user_id=ANN)  # no admin
    assert "admin" in (await _answer(tg, anns)).lower()
    assert gw.stack.gateway_db.get_access(f"telegram:{STRANGER}") is None

    pressed = tg.press(card, f"/admin approve #{ask_id}", user_id=ADMIN, first_name="Ada")
    assert "Approved" in await _answer(tg, pressed)
    await tg.wait_for(
        lambda: any("You're in" in m.text for m in tg.in_chat(STRANGER)), 15, "the greeting"
    )
    await tg.wait_for(lambda: card.reply_markup is None, 15, "the card updated")
    assert f"approved by telegram:{ADMIN}" in card.text and code not in card.text
    assert len([m for m in tg.in_chat(ADMIN) if "Pairing request" in m.text]) == 1

    again = tg.press(stale, f"/admin deny #{ask_id}", user_id=ADMIN)
    assert "already decided" in await _answer(tg, again)
    record = gw.stack.gateway_db.get_access(f"telegram:{STRANGER}")
    assert record is not None and record.state == "allowed"
    rows = gw.stack.gateway_db.audit_entries()
    assert any(
        r.actor == f"telegram:{ADMIN}" and f"approve #{ask_id}" in r.args and r.outcome == "ok"
        for r in rows
    )
    assert any(r.actor == f"telegram:{ANN}" and r.outcome == "refused" for r in rows)

    llm.reply("Welcome aboard.")
    tg.message("thanks!", user_id=STRANGER)
    await tg.wait_for(
        lambda: any(m.text == "Welcome aboard." for m in tg.in_chat(STRANGER)), 15, "an answer"
    )


async def test_deny_by_the_button_tells_the_person_politely_and_refuses_them(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(**PAIRING)
    tg = gw.telegram
    tg.started.add(ADMIN)
    tg.message("let me in", user_id=STRANGER)
    card = await _card(tg)
    ask_id = _buttons(card)[1][1].rsplit("#", 1)[1]
    pressed = tg.press(card, f"/admin deny #{ask_id}", user_id=ADMIN)
    assert "Denied" in await _answer(tg, pressed)
    await tg.wait_for(
        lambda: any("declined" in m.text for m in tg.in_chat(STRANGER)), 15, "the refusal"
    )
    await tg.wait_for(lambda: card.reply_markup is None, 15, "the card updated")
    assert f"denied by telegram:{ADMIN}" in card.text
    record = gw.stack.gateway_db.get_access(f"telegram:{STRANGER}")
    assert record is not None and record.state == "denied"


async def test_a_typed_approve_settles_the_card_and_greets_the_person(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(**PAIRING)
    tg = gw.telegram
    tg.started.add(ADMIN)
    tg.message("hi", user_id=STRANGER)
    card = await _card(tg)
    tg.message(f"/admin approve {_code(tg)}", user_id=ADMIN)
    await tg.wait_for(
        lambda: any("You're in" in m.text for m in tg.in_chat(STRANGER)), 15, "the greeting"
    )
    await tg.wait_for(lambda: card.reply_markup is None, 15, "the card updated")
    assert "approved by" in card.text


async def test_the_buttons_work_after_a_restart(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway(**PAIRING)
    tg = gw.telegram
    tg.started.add(ADMIN)
    tg.message("hi", user_id=STRANGER)
    card = await _card(tg)
    ask_id = _buttons(card)[0][1].rsplit("#", 1)[1]
    await until(lambda: bool(gw.runner.pairing.requests.cards(ask_id)), what="card kept")
    await gw.close()

    again = await make_gateway(**PAIRING)
    pressed = tg.press(card, f"/admin approve #{ask_id}", user_id=ADMIN)
    assert "Approved" in await _answer(tg, pressed)
    await tg.wait_for(lambda: card.reply_markup is None, 15, "the card updated")
    record = again.stack.gateway_db.get_access(f"telegram:{STRANGER}")
    assert record is not None and record.state == "allowed"

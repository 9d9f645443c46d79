"""Admins are told of a stranger's pairing request on Discord: a DM with **Approve** /
**Deny** buttons (message components); a press runs ``/admin approve #ID`` /
``/admin deny #ID`` for whoever pressed (admins only, answered ephemerally), the card is
edited to show the decision without its buttons, and the person is told. The buttons
of a card sent before a restart work after it."""

from __future__ import annotations

import copy
import re
from typing import Any

from tests.discord.conftest import ADMIN, ADMIN_ID, ANN, STRANGER, GatewayFactory
from tests.fakes.discord_api import FakeDiscord, Posted
from tests.waiting import until

DM_STRANGER = 930_000_000_000_000_009
PAIRING = {"CHORUS_AUTH__POLICY": "pairing"}
STRANGER_KEY = f"discord:{STRANGER['id']}"


def _cards(fake: FakeDiscord) -> list[Posted]:
    dm = fake.dm_channels.get(ADMIN_ID)
    return [p for p in fake.posted if p.channel_id == dm and "Pairing request" in p.content]


async def _card(fake: FakeDiscord) -> Posted:
    await until(lambda: bool(_cards(fake)), what="a card in the admin's DM")
    return _cards(fake)[0]


def _buttons(data: dict[str, Any]) -> list[tuple[str, str]]:
    rows = data.get("components") or []
    return [(c["label"], c["custom_id"]) for row in rows for c in row["components"]]


async def test_an_admin_approves_by_a_press_and_a_later_press_finds_it_decided(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(**PAIRING)
    fake = gw.discord
    fake.message("hello", author=STRANGER, channel_id=DM_STRANGER)
    card = await _card(fake)
    notice = next(p.content for p in fake.posted_in(DM_STRANGER) if "pairing code" in p.content)
    code = re.search(r"admin: (\w{8})", notice)
    assert code is not None
    assert STRANGER_KEY in card.content and code.group(1) in card.content
    [(approve, approve_id), (deny, deny_id)] = _buttons(card.data)
    assert (approve, deny) == ("Approve", "Deny")
    assert re.fullmatch(r"/admin approve #\w+", approve_id)
    stale = copy.deepcopy(card.data)

    anns = fake.press(card.data, approve_id, user=ANN)
    await fake.wait_answered(anns)
    assert anns.ephemeral and "admins only" in anns.text
    assert gw.stack.gateway_db.get_access(STRANGER_KEY) is None

    pressed = fake.press(card.data, approve_id, user=ADMIN)
    await fake.wait_answered(pressed)
    assert pressed.ephemeral and "Approved" in pressed.text
    await until(lambda: any("You're in" in p.content for p in fake.posted_in(DM_STRANGER)))
    await until(lambda: not _buttons(card.data), what="the card edited")
    assert f"approved by discord:{ADMIN_ID}" in card.content
    assert code.group(1) not in card.content

    again = fake.press(stale, deny_id, user=ADMIN)
    await fake.wait_answered(again)
    assert "already decided" in again.text
    record = gw.stack.gateway_db.get_access(STRANGER_KEY)
    assert record is not None and record.state == "allowed"


async def test_a_card_sent_before_a_restart_is_decided_after_it(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(**PAIRING)
    fake = gw.discord
    fake.message("hello", author=STRANGER, channel_id=DM_STRANGER)
    card = await _card(fake)
    [_, (_, deny_id)] = _buttons(card.data)
    ask_id = deny_id.rsplit("#", 1)[1]
    await until(lambda: bool(gw.runner.pairing.requests.cards(ask_id)), what="the card kept")
    await gw.close()

    again = await make_gateway(**PAIRING)
    pressed = fake.press(card.data, deny_id, user=ADMIN)
    await fake.wait_answered(pressed)
    assert "Denied" in pressed.text
    await until(lambda: any("declined" in p.content for p in fake.posted_in(DM_STRANGER)))
    await until(lambda: not _buttons(card.data), what="the card edited")
    record = again.stack.gateway_db.get_access(STRANGER_KEY)
    assert record is not None and record.state == "denied"

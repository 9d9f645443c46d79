"""Admins are told of a stranger's pairing request on Slack: a DM with Block Kit
**Approve** / **Deny** buttons; a click runs ``/admin approve #ID`` / ``/admin deny #ID``
for whoever clicked (admins only, answered to them alone), ``chat.update`` then shows
the decision without the buttons, and the person is told."""

from __future__ import annotations

import re
from typing import Any

from tests.fakes.slack_api import Posted
from tests.slack.conftest import ADMIN, ANN, STRANGER, GatewayFactory, SlackGateway
from tests.waiting import until

DM_STRANGER = "DSTRANGE"
DM_ADMIN = "DADMIN01"
PAIRING = {"CHORUS_AUTH__POLICY": "pairing"}


def _buttons(posted: Posted) -> list[tuple[str, str, str]]:
    return [
        (element["action_id"], element["text"]["text"], element["value"])
        for block in posted.blocks or []
        if block["type"] == "actions"
        for element in block["elements"]
    ]


def _text(blocks: list[dict[str, Any]] | None) -> str:
    return " ".join(b["text"]["text"] for b in blocks or [] if b["type"] == "section")


async def _card(gw: SlackGateway) -> Posted:
    await until(lambda: any(p.blocks for p in gw.slack.posted_in(ADMIN)), what="a card")
    return next(p for p in gw.slack.posted_in(ADMIN) if p.blocks)


async def test_an_admin_approves_by_a_click_and_a_second_click_finds_it_decided(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(**PAIRING)
    slack = gw.slack
    slack.add_user(STRANGER, "Zed Stranger")
    await gw.event(slack.person("hello", user=STRANGER, channel=DM_STRANGER))
    card = await _card(gw)
    notice = next(p.text for p in slack.posted_in(DM_STRANGER) if "pairing code" in p.text)
    code = re.search(r"admin: (\w{8})", notice)
    assert code is not None
    shown = _text(card.blocks)
    assert f"slack:{STRANGER}" in shown and code.group(1) in shown and "Zed" in shown
    [(approve_id, approve, command), (deny_id, deny, deny_command)] = _buttons(card)
    assert (approve, deny) == ("Approve", "Deny")
    assert re.fullmatch(r"/admin approve #\w+", command)

    url = await gw.click(approve_id, command, user=ANN, channel=DM_ADMIN)
    assert "admins only" in (await slack.wait_response(url))["text"]
    assert gw.stack.gateway_db.get_access(f"slack:{STRANGER}") is None

    url = await gw.click(approve_id, command, user=ADMIN, channel=DM_ADMIN)
    answer = await slack.wait_response(url)
    assert "Approved" in answer["text"] and answer["response_type"] == "ephemeral"
    await until(lambda: any("You're in" in p.text for p in slack.posted_in(DM_STRANGER)))
    await until(lambda: not _buttons(card), what="the card updated")
    assert f"approved by slack:{ADMIN}" in _text(card.blocks)
    assert code.group(1) not in _text(card.blocks)

    url = await gw.click(deny_id, deny_command, user=ADMIN, channel=DM_ADMIN)
    assert "already decided" in (await slack.wait_response(url))["text"]
    record = gw.stack.gateway_db.get_access(f"slack:{STRANGER}")
    assert record is not None and record.state == "allowed"


async def test_a_deny_click_tells_the_person_and_denies_them(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway(**PAIRING)
    slack = gw.slack
    await gw.event(slack.person("hello", user=STRANGER, channel=DM_STRANGER))
    card = await _card(gw)
    [_, (deny_id, _, deny_command)] = _buttons(card)
    url = await gw.click(deny_id, deny_command, user=ADMIN, channel=DM_ADMIN)
    assert "Denied" in (await slack.wait_response(url))["text"]
    await until(lambda: any("declined" in p.text for p in slack.posted_in(DM_STRANGER)))
    await until(lambda: not _buttons(card), what="the card updated")
    record = gw.stack.gateway_db.get_access(f"slack:{STRANGER}")
    assert record is not None and record.state == "denied"

"""Pairing requests through the whole gateway on the in-memory platform (fake clock):
the admin's card, a request whose code expired, unknown and refused decisions, and
the hour between two cards for one person."""

from __future__ import annotations

import re

from tests.runner.conftest import GatewayFactory

PAIRING = {"CHORUS_AUTH__POLICY": "pairing"}


async def test_a_request_whose_code_expired_is_not_approved_and_its_card_says_so(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(**PAIRING)
    await gw.ask("let me in", user="50")
    card = await gw.adapter.pop(20)
    found = re.search(r"#(\w+)", card.text)
    assert card.chat_id == "dm-1" and found is not None
    ask = found.group(1)

    refused = await gw.ask(f"/admin approve #{ask}", user="2")  # an allowed user, no admin
    assert "admins only" in refused.text
    assert "no pairing request" in (await gw.ask("/admin approve #zzzzzz", user="1")).text.lower()

    await gw.clock.advance(61 * 60)
    expired = await gw.ask(f"/admin approve #{ask}", user="1")
    assert "no valid pairing code" in expired.text
    assert "had expired" in card.text  # the card, edited
    assert gw.stack.gateway_db.get_access("testchat:50") is None
    again = await gw.ask(f"/admin deny #{ask}", user="1")
    assert "already decided" in again.text
    assert gw.stack.gateway_db.get_access("testchat:50") is None

    await gw.ask("let me in, please", user="50")  # an hour on: the admins are told again
    assert "Pairing request" in (await gw.adapter.pop(20)).text
    audit = [(e.actor, e.args, e.outcome) for e in gw.stack.gateway_db.audit_entries()]
    assert ("testchat:1", f"approve #{ask} → testchat:50", "expired") in audit
    assert ("testchat:2", f"approve #{ask}", "refused") in audit


async def test_admins_are_told_of_one_person_at_most_once_an_hour(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(**PAIRING)
    await gw.ask("hello", user="60")
    assert "Pairing request" in (await gw.adapter.pop(20)).text
    await gw.clock.advance(10 * 60)
    second = await gw.ask("/pair", user="60")  # a new code, no new card
    assert "pairing code" in second.text
    await gw.settle()
    cards = [t for t in gw.adapter.texts("dm-1") if "Pairing request" in t]
    assert len(cards) == 1
    code = re.search(r"admin: (\w{8})", second.text)
    assert code is not None
    ask = re.search(r"#(\w+)", cards[0])
    assert ask is not None
    approved = await gw.ask(f"/admin approve #{ask.group(1)}", user="1")  # the newest code
    assert "Approved testchat:60" in approved.text
    assert any("You're in" in t for t in gw.adapter.texts("dm-60"))
    assert "approved by testchat:1" in gw.adapter.texts("dm-1")[0]

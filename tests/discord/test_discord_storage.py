"""A full disk under ``state.db`` on Discord, which never sends a message again: what
arrives meanwhile is kept, in order, and answered once when space is back."""

from __future__ import annotations

import logging

import pytest

from gateway import _texts as t
from tests.discord.conftest import ANN, DM_ANN, GatewayFactory
from tests.telegram.test_telegram_storage import disk_full


async def test_messages_arriving_while_the_disk_is_full_are_kept_and_answered_once_in_order(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """3 direct messages of Ann arrive while the disk is full: she is told once, the
    model is not asked, and the log has the storage's ERROR line and no traceback; once
    space is back the 3 are answered once, in order (before: 3 of 3 lost, a traceback
    each)."""
    caplog.set_level(logging.INFO)
    gw = await make_gateway()
    fake, llm = gw.discord, gw.server
    llm.responder(lambda body: "ok")
    words = [f"message {n}: " + "long words " * 2500 for n in range(3)]
    with disk_full(gw.stack.inbox):
        for text in words:
            fake.message(text, author=ANN, channel_id=DM_ANN)
        [notice] = await fake.wait_posted(DM_ANN, 1)
        assert notice.content == t.STORAGE_FAULT_WAIT
        await fake.wait_for(
            lambda: gw.adapter.counters["unrecorded_deliveries"] == 3, what="3 messages held"
        )
        assert not (await gw.stack.readiness())["storage"]
        assert llm.requests == []
        assert "Traceback" not in caplog.text
        assert any("disk full" in r.getMessage() for r in caplog.records if r.levelno >= 40)

    await fake.wait_posted(DM_ANN, 2, timeout=30)
    await gw.settle()
    said = "\n".join(str(m["content"]) for m in llm.requests[-1]["messages"] if m["role"] == "user")
    places = [said.find(text.strip()) for text in words]
    assert all(p >= 0 for p in places) and places == sorted(places), places
    assert all(said.count(text.strip()) == 1 for text in words)
    posted = [p.content for p in fake.posted_in(DM_ANN)]
    assert posted[0] == t.STORAGE_FAULT_WAIT and posted.count(t.STORAGE_FAULT_WAIT) == 1
    assert posted[1:] and set(posted[1:]) == {"ok"}

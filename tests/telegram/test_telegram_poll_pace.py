"""The next ``getUpdates`` waits until the last batch has been taken to be handled:
a burst's next 100 updates are not read in the middle of its first turns. A taking
that hangs holds the polling only ``CAUGHT_UP_AT_MOST`` seconds."""

from __future__ import annotations

import pytest

from gateway.adapters.telegram import _inbound
from tests.telegram.conftest import ANN, BOB, GatewayFactory

DELAY = 1.0
PHOTO = [{"file_id": "p1", "file_unique_id": "p1", "width": 90, "height": 90, "file_size": 12}]


async def test_the_next_poll_waits_until_the_batch_was_taken(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway(vision=True, CHORUS_LLM__VISION="true")
    tg = gw.telegram
    tg.files["p1"] = b"\xff\xd8 fake jpeg"
    tg.delays["getFile"] = DELAY  # taking the photo's message fetches it first
    gw.server.responder(lambda body: "seen")
    with tg.at_once():
        photo = tg.message(None, user_id=ANN, photo=PHOTO, caption="what is this?")
        tg.message("and hello", user_id=BOB, first_name="Bob")
    await tg.wait_messages(ANN, 1, timeout=30)
    await tg.wait_messages(BOB, 1, timeout=30)
    [fetch] = tg.calls_of("getFile")
    after = [
        c for c in tg.calls_of("getUpdates") if int(c.params.get("offset", 0)) > photo["update_id"]
    ]
    assert after, "the batch was confirmed by a later poll"
    assert after[0].at >= fetch.at + DELAY  # not asked while the photo was being fetched


async def test_a_taking_that_hangs_holds_the_polling_only_a_while(
    make_gateway: GatewayFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_inbound, "CAUGHT_UP_AT_MOST", 0.2)
    gw = await make_gateway(vision=True, CHORUS_LLM__VISION="true")
    tg = gw.telegram
    tg.files["p1"] = b"\xff\xd8 fake jpeg"
    tg.delays["getFile"] = 5.0
    gw.server.responder(lambda body: "seen")
    with tg.at_once():
        photo = tg.message(None, user_id=ANN, photo=PHOTO, caption="what is this?")
    await tg.wait_for(
        lambda: any(
            int(c.params.get("offset", 0)) > photo["update_id"] for c in tg.calls_of("getUpdates")
        ),
        4.0,
        "a poll while the photo is still being fetched",
    )
    assert not tg.in_chat(ANN)  # still taking it
    await tg.wait_messages(ANN, 1, timeout=30)

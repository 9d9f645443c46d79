"""A person deleting or editing their message in Discord (MESSAGE_DELETE, MESSAGE_UPDATE
on the gateway): the transcript and its search index follow."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.discord.conftest import ANN, ANN_ID, DM_ANN, GatewayFactory
from tests.fakes import Reply
from tests.fakes.discord_data import iso_now
from tests.waiting import until

ANN_KEY = f"discord:{ANN_ID}"


def users_in(request: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in request["messages"] if m["role"] == "user"]


async def test_a_deleted_message_leaves_the_transcript_its_index_and_the_context(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    fake, db = gw.discord, gw.stack.db
    sent = fake.message("my zeppelin code is 4711", author=ANN, channel_id=DM_ANN)
    await fake.wait_posted(DM_ANN, 1)
    await gw.settle()
    assert await db.search(ANN_KEY, "zeppelin")

    fake.dispatch("MESSAGE_DELETE", {"id": sent["id"], "channel_id": sent["channel_id"]})

    async def gone() -> bool:
        return not await db.search(ANN_KEY, "zeppelin")

    await until(gone, what="the deleted message out of the search index")
    fake.message("what did I tell you?", author=ANN, channel_id=DM_ANN)
    await fake.wait_posted(DM_ANN, 2)
    assert users_in(gw.server.requests[-1]) == ["what did I tell you?"]


async def test_an_unknown_deleted_message_changes_nothing(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="gateway.sessions._retractions")
    gw = await make_gateway()
    fake, db = gw.discord, gw.stack.db
    sent = fake.message("my zeppelin code is 4711", author=ANN, channel_id=DM_ANN)
    await fake.wait_posted(DM_ANN, 1)
    await gw.settle()
    fake.dispatch("MESSAGE_DELETE", {"id": "1234567890123", "channel_id": sent["channel_id"]})
    await until(lambda: "is in no transcript" in caplog.text, what="the deletion looked at")
    assert await db.search(ANN_KEY, "zeppelin")


def edit(sent: dict[str, Any], content: str) -> dict[str, Any]:
    """The MESSAGE_UPDATE Discord sends when ``sent`` is edited to ``content``."""
    return {**sent, "content": content, "edited_timestamp": iso_now()}


async def test_an_edited_message_is_stored_and_found_with_its_new_words(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    fake, db = gw.discord, gw.stack.db
    first = fake.message("what is the weather in Oslo?", author=ANN, channel_id=DM_ANN)
    await fake.wait_posted(DM_ANN, 1)
    later = fake.message("and tomorrow?", author=ANN, channel_id=DM_ANN)
    await fake.wait_posted(DM_ANN, 2)
    await gw.settle()

    fake.dispatch("MESSAGE_UPDATE", edit(first, "what is the weather in Lisbon?"))

    async def found() -> bool:
        return bool(await db.search(ANN_KEY, "lisbon"))

    await until(found, what="the edited words in the search index")
    assert await db.search(ANN_KEY, "oslo") == []
    await gw.settle()
    assert len(gw.server.requests) == 2  # a turn answered before: not answered again

    fake.dispatch("MESSAGE_UPDATE", edit(later, "and the day after?"))
    await fake.wait_posted(DM_ANN, 3)
    assert users_in(gw.server.requests[-1]) == [
        "what is the weather in Lisbon?",
        "and the day after?",
    ]


async def test_a_deleted_message_of_a_merged_turn_leaves_only_its_words(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    fake, db = gw.discord, gw.stack.db

    def slow_first(body: dict[str, Any]) -> Reply:
        return Reply.of_text("noted", delay=3.0 if len(users_in(body)) == 1 else 0.0)

    gw.server.responder(slow_first)
    fake.message("hello there", author=ANN, channel_id=DM_ANN)
    await until(lambda: gw.server.in_flight == 1, what="the first answer being written")
    secret = fake.message("my zeppelin code is 4711", author=ANN, channel_id=DM_ANN)
    fake.message("what is the weather in Oslo?", author=ANN, channel_id=DM_ANN)
    await fake.wait_posted(DM_ANN, 2)
    await gw.settle()
    merged = "my zeppelin code is 4711\n\nwhat is the weather in Oslo?"
    assert users_in(gw.server.requests[-1]) == ["hello there", merged]

    fake.dispatch("MESSAGE_DELETE", {"id": secret["id"], "channel_id": secret["channel_id"]})

    async def gone() -> bool:
        return not await db.search(ANN_KEY, "zeppelin")

    await until(gone, what="the deleted part out of the search index")
    assert await db.search(ANN_KEY, "oslo")
    fake.message("what did I tell you?", author=ANN, channel_id=DM_ANN)
    await fake.wait_posted(DM_ANN, 3)
    assert users_in(gw.server.requests[-1]) == [
        "hello there",
        "what is the weather in Oslo?",
        "what did I tell you?",
    ]

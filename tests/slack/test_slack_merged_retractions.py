"""Messages merged into one turn (sent while the answer to an earlier one was being
written): deleting or editing one of them in Slack changes that part of the stored turn."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.fakes import Reply
from tests.integration.recorder_plugin import install_recorder, read_log
from tests.slack.conftest import ANN, DM_ANN, GatewayFactory, SlackGateway, user_texts
from tests.slack.test_slack_retractions import changed, deleted
from tests.waiting import until

ANN_KEY = f"slack:{ANN}"


def slow_first(body: dict[str, Any]) -> Reply:
    """The first answer takes a while, so the next messages queue up behind it."""
    first = len([m for m in body["messages"] if m["role"] == "user"]) == 1
    return Reply.of_text("noted", delay=3.0 if first else 0.0)


async def merged_turn(gw: SlackGateway) -> list[dict[str, Any]]:
    """Ann's first message, then three sent while it is answered: one turn of three."""
    gw.server.responder(slow_first)
    first = gw.slack.person("hello there", user=ANN, channel=DM_ANN)
    await gw.event(first)
    await until(lambda: gw.server.in_flight == 1, what="the first answer being written")
    parts = [
        gw.slack.person(text, user=ANN, channel=DM_ANN)
        for text in ("my zeppelin code is 4711", "what is the weather in Oslo?", "thanks")
    ]
    for part in parts:
        await gw.event(part)
    await gw.slack.wait_posted(DM_ANN, 2)
    await gw.settle()
    assert user_texts(gw.server.requests[-1]) == [
        "hello there",
        "my zeppelin code is 4711\n\nwhat is the weather in Oslo?\n\nthanks",
    ]
    return parts


async def stored_user_texts(gw: SlackGateway) -> list[str | None]:
    [session] = await gw.stack.db.list_sessions()
    return [m.content for m in await gw.stack.db.get_messages(session.id) if m.role == "user"]


async def test_a_deleted_part_of_a_merged_turn_leaves_its_text_and_the_context(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    db = gw.stack.db
    secret, weather, thanks = await merged_turn(gw)
    assert await db.search(ANN_KEY, "zeppelin")

    await gw.event(deleted(secret))

    async def gone() -> bool:
        return not await db.search(ANN_KEY, "zeppelin")

    await until(gone, what="the deleted part out of the search index")
    assert await stored_user_texts(gw) == [
        "hello there",
        "what is the weather in Oslo?\n\nthanks",
    ]
    await gw.event(gw.slack.person("what did I tell you?", user=ANN, channel=DM_ANN))
    await gw.slack.wait_posted(DM_ANN, 3)
    assert user_texts(gw.server.requests[-1]) == [
        "hello there",
        "what is the weather in Oslo?\n\nthanks",
        "what did I tell you?",
    ]

    await gw.event(deleted(weather))  # the other parts, one by one: the whole turn at last
    await gw.event(deleted(thanks))

    async def turn_gone() -> bool:
        return (await stored_user_texts(gw))[1] is None

    await until(turn_gone, what="the merged turn gone with its last part")


async def test_an_edited_part_of_the_last_merged_turn_is_answered_again_in_its_place(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    db = gw.stack.db
    secret, weather, _ = await merged_turn(gw)

    await gw.event(changed(weather, "what is the weather in Lisbon?"))
    await gw.slack.wait_posted(DM_ANN, 3)  # the session was on that turn: answered again
    assert user_texts(gw.server.requests[-1]) == [
        "hello there",
        "my zeppelin code is 4711\n\nwhat is the weather in Lisbon?\n\nthanks",
    ]
    await gw.settle()
    assert await db.search(ANN_KEY, "lisbon") and not await db.search(ANN_KEY, "oslo")

    await gw.event(deleted(secret))  # the turn answered again still knows its parts

    async def gone() -> bool:
        return not await db.search(ANN_KEY, "zeppelin")

    await until(gone, what="a part of the turn answered again deleted")
    texts = [t for t in await stored_user_texts(gw) if t]
    assert texts[-1] == "what is the weather in Lisbon?\n\nthanks"


async def test_a_deleted_part_withdraws_its_turn_from_the_provider_as_it_was(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    install_recorder(chorus_home)
    gw = await make_gateway(CHORUS_MEMORY__PROVIDER="recorder", CHORUS_MEMORY__FLUSH_MIN_TURNS="1")
    secret, _, _ = await merged_turn(gw)
    queue = gw.stack.background.queue
    assert await asyncio.to_thread(queue.flush, 10)

    await gw.event(deleted(secret))

    def withdrawn() -> list[dict[str, Any]]:
        return [
            e["withdrawn"]
            for e in read_log(chorus_home)
            if e["hook"] == "on_session_switch" and e["withdrawn"]
        ]

    async def flushed() -> bool:
        await asyncio.to_thread(queue.flush, 1)
        return bool(withdrawn())

    await until(flushed, what="the turn withdrawn from the provider")
    [turn] = withdrawn()
    assert turn["turn"] == 2
    assert turn["user_content"] == (
        "my zeppelin code is 4711\n\nwhat is the weather in Oslo?\n\nthanks"
    )
    assert await stored_user_texts(gw) == ["hello there", "what is the weather in Oslo?\n\nthanks"]

"""A person deleting or editing their message in Slack: the transcript and its search
index follow, and the deleted turn leaves the conversation the model sees."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from tests.integration.recorder_plugin import install_recorder, read_log
from tests.slack.conftest import ANN, BOB, DM_ANN, GatewayFactory, user_texts
from tests.waiting import until

ANN_KEY = f"slack:{ANN}"


def deleted(sent: dict[str, Any], *, by: str | None = None) -> dict[str, Any]:
    """The ``message_deleted`` event Slack sends when ``sent`` is deleted."""
    before = {k: v for k, v in sent.items() if k in ("type", "user", "text", "ts")}
    if by is not None:
        before["user"] = by
    return {
        "type": "message",
        "subtype": "message_deleted",
        "hidden": True,
        "channel": sent["channel"],
        "channel_type": sent.get("channel_type", "im"),
        "ts": f"{float(sent['ts']) + 50:.6f}",
        "deleted_ts": sent["ts"],
        "event_ts": f"{float(sent['ts']) + 50:.6f}",
        "previous_message": before,
    }


def changed(sent: dict[str, Any], text: str) -> dict[str, Any]:
    """The ``message_changed`` event Slack sends when ``sent`` is edited to ``text``."""
    before = {k: v for k, v in sent.items() if k in ("type", "user", "text", "ts")}
    now = {**before, "text": text, "edited": {"user": sent["user"], "ts": "1700009999.000001"}}
    return {
        "type": "message",
        "subtype": "message_changed",
        "hidden": True,
        "channel": sent["channel"],
        "channel_type": sent.get("channel_type", "im"),
        "ts": "1700009999.000002",
        "event_ts": "1700009999.000002",
        "message": now,
        "previous_message": before,
    }


async def test_a_deleted_message_leaves_the_transcript_its_index_and_the_context(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    db = gw.stack.db
    secret = gw.slack.person("my zeppelin code is 4711", user=ANN, channel=DM_ANN)
    await gw.event(secret)
    await gw.slack.wait_posted(DM_ANN, 1)
    await gw.settle()
    assert await db.search(ANN_KEY, "zeppelin")

    status, _ = await gw.event(deleted(secret))
    assert status == 200

    async def gone() -> bool:
        return not await db.search(ANN_KEY, "zeppelin")

    await until(gone, what="the deleted message out of the search index")
    [session] = await db.list_sessions()
    stored = [m.content for m in await db.get_messages(session.id) if m.role == "user"]
    assert not any("zeppelin" in (text or "") for text in stored)

    await gw.event(gw.slack.person("what did I tell you?", user=ANN, channel=DM_ANN))
    await gw.slack.wait_posted(DM_ANN, 2)
    assert user_texts(gw.server.requests[-1]) == ["what did I tell you?"]


async def test_only_the_author_deletes_their_message_and_unknown_ones_change_nothing(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="gateway.sessions._retractions")
    gw = await make_gateway()
    db = gw.stack.db
    secret = gw.slack.person("my zeppelin code is 4711", user=ANN, channel=DM_ANN)
    await gw.event(secret)
    await gw.slack.wait_posted(DM_ANN, 1)
    await gw.settle()
    await gw.event(deleted(secret, by=BOB))
    await gw.event(deleted({**secret, "ts": "1600000000.000001"}))
    retractions = gw.stack.retractions
    assert retractions is not None
    await until(
        lambda: "is in no transcript" in caplog.text and "not the retracting" in caplog.text,
        what="both deletions looked at",
    )
    assert await db.search(ANN_KEY, "zeppelin")
    await gw.event(deleted(secret))  # then Ann deletes it herself

    async def gone() -> bool:
        return not await db.search(ANN_KEY, "zeppelin")

    await until(gone, what="the message its author deleted out of the index")


async def test_an_edited_message_is_stored_and_found_with_its_new_words(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    db = gw.stack.db
    first = gw.slack.person("what is the weather in Oslo?", user=ANN, channel=DM_ANN)
    await gw.event(first)
    await gw.slack.wait_posted(DM_ANN, 1)
    later = gw.slack.person("and tomorrow?", user=ANN, channel=DM_ANN)
    await gw.event(later)
    await gw.slack.wait_posted(DM_ANN, 2)
    await gw.settle()

    await gw.event(changed(first, "what is the weather in Lisbon?"))

    async def found() -> bool:
        return bool(await db.search(ANN_KEY, "lisbon"))

    await until(found, what="the edited words in the search index")
    assert await db.search(ANN_KEY, "oslo") == []
    await gw.settle()
    assert len(gw.server.requests) == 2  # a turn answered before: not answered again

    await gw.event(changed(later, "and the day after?"))  # the turn the session is on
    await gw.slack.wait_posted(DM_ANN, 3)
    assert user_texts(gw.server.requests[-1]) == [
        "what is the weather in Lisbon?",
        "and the day after?",
    ]
    await gw.settle()
    [session] = await db.list_sessions()
    texts = [m.content for m in await db.get_messages(session.id) if m.role == "user"]
    assert "and tomorrow?" not in texts


async def test_a_deleted_turn_is_withdrawn_from_the_memory_provider(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    install_recorder(chorus_home)
    gw = await make_gateway(CHORUS_MEMORY__PROVIDER="recorder", CHORUS_MEMORY__FLUSH_MIN_TURNS="1")
    secret = gw.slack.person("my zeppelin code is 4711", user=ANN, channel=DM_ANN)
    await gw.event(secret)
    await gw.slack.wait_posted(DM_ANN, 1)
    await gw.event(gw.slack.person("and my name is Ann", user=ANN, channel=DM_ANN))
    await gw.slack.wait_posted(DM_ANN, 2)
    await gw.settle()
    queue = gw.stack.background.queue
    assert await asyncio.to_thread(queue.flush, 10)
    synced = [e["user"] for e in read_log(chorus_home) if e["hook"] == "sync_turn"]
    assert synced == ["my zeppelin code is 4711", "and my name is Ann"]

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

    await until(flushed, what="the deleted turn withdrawn from the provider")
    [turn] = withdrawn()
    assert turn["turn"] == 1 and turn["user_content"] == "my zeppelin code is 4711"
    switches = [e for e in read_log(chorus_home) if e["hook"] == "on_session_switch"]
    assert {e["reason"] for e in switches if e["rewound"]} == {"deleted"}

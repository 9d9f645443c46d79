"""Two real replicas: a person's deletion or edit in Slack reaching the replica that does
not own their session is handed to the one that does, and applied there once: the
transcript and its search index follow, the owner's live agent forgets the deleted
turn, and an edited last message is answered again, once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from memory.transcripts import SessionDB
from tests.fakes import FakeOpenAI, Reply
from tests.fakes.redis_server import RedisServer
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_requests import event_callback, post_event
from tests.fakes.telegram_api import FakeTelegram
from tests.replicas.cluster import Cluster, Process
from tests.slack.test_slack_retractions import changed, deleted
from tests.waiting import until

pytest_plugins = ["tests.fakes.redis_fixtures", "tests.fakes.postgres_fixtures"]

pytestmark = pytest.mark.slow

ANN, DM = "UANN00001", "DANN00001"
ANN_KEY = f"slack:{ANN}"


def users(body: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in body["messages"] if m["role"] == "user"]


def answer_to(text: str) -> str:
    """The answer to ``text``: its words backwards, so no answer is found by them."""
    return f"heard: {text[::-1]}"


def echo(body: dict[str, Any]) -> Reply:
    said = users(body)
    if "memory" in str(body.get("tools", "")) and said and "flush" in said[-1].lower():
        return Reply.of_text("")
    return Reply.of_text(answer_to(said[-1] if said else ""))


@pytest.fixture
async def cluster(
    tmp_path: Path, redis_server: RedisServer, postgres_url: str, server: FakeOpenAI
) -> AsyncIterator[Cluster]:
    with FakeTelegram() as telegram, FakeSlack() as slack:
        made = Cluster(
            tmp_path / "cluster", redis_server.url, postgres_url, server, telegram, slack
        )
        try:
            yield made
        finally:
            made.close()


async def send(cluster: Cluster, to: Process, event: dict[str, Any], **extra: Any) -> None:
    status, _ = await post_event(f"{to.url}/slack/events", event_callback(event), **extra)
    assert status == 200


async def say(cluster: Cluster, to: Process, text: str) -> dict[str, Any]:
    """Ann says ``text`` through ``to``; back once its answer is shown."""
    assert cluster.slack is not None
    event = cluster.slack.person(text, user=ANN, channel=DM)
    await send(cluster, to, event)
    await cluster.slack.wait_for(
        lambda: any(p.text == answer_to(text) for p in cluster.slack.posted_in(DM)),  # type: ignore[union-attr]
        timeout=60,
        what=f"the answer to {text!r}",
    )
    return event


def count(cluster: Cluster, line: str) -> int:
    return sum(p.log.read_text(errors="replace").count(line) for p in cluster.processes)


async def search(cluster: Cluster, words: str) -> bool:
    def found() -> bool:
        db = SessionDB(cluster.database_url)
        try:
            return bool(db.search(ANN_KEY, words))
        finally:
            db.close()

    return await asyncio.to_thread(found)


async def test_a_deletion_reaching_the_other_replica_is_applied_by_the_owner_once(
    cluster: Cluster,
) -> None:
    cluster.llm.responder(echo)
    a = await cluster.replica("replica-a")
    b = await cluster.replica("replica-b")
    secret = await say(cluster, a, "my zeppelin code is 4711")  # a owns the session now
    await say(cluster, a, "and the weather?")
    assert await search(cluster, "zeppelin")

    gone = deleted(secret)
    payload = event_callback(gone)
    status, _ = await post_event(f"{b.url}/slack/events", payload)
    assert status == 200
    status, _ = await post_event(f"{a.url}/slack/events", payload, retry_num=1)  # Slack's retry
    assert status == 200

    async def out_of_index() -> bool:
        return not await search(cluster, "zeppelin")

    await until(out_of_index, 60, "the deleted message out of the search index")
    await say(cluster, b, "what did I tell you?")  # the owner's agent forgot it
    assert users(cluster.llm.requests[-1]) == ["and the weather?", "what did I tell you?"]
    assert count(cluster, "a slack message was deleted; its turn is withdrawn") == 1
    assert "a slack message was deleted" in a.log.read_text()


async def test_an_edit_reaching_the_other_replica_is_answered_again_by_the_owner_once(
    cluster: Cluster,
) -> None:
    cluster.llm.responder(echo)
    a = await cluster.replica("replica-a")
    b = await cluster.replica("replica-b")
    await say(cluster, a, "what is the weather in Oslo?")
    later = await say(cluster, a, "and tomorrow?")

    await send(cluster, b, changed(later, "and the day after?"))
    assert cluster.slack is not None
    await cluster.slack.wait_for(
        lambda: any(p.text == answer_to("and the day after?") for p in cluster.slack.posted_in(DM)),  # type: ignore[union-attr]
        timeout=60,
        what="the edited message answered again",
    )
    assert users(cluster.llm.requests[-1]) == [
        "what is the weather in Oslo?",
        "and the day after?",
    ]
    assert await search(cluster, "after") and not await search(cluster, "tomorrow")
    await asyncio.sleep(1.0)  # nothing answers it a second time meanwhile
    asked = [r for r in cluster.llm.requests if users(r)[-1:] == ["and the day after?"]]
    assert len(asked) == 1
    assert count(cluster, "a slack message was edited") == 1

"""The retaindb provider through real httpx against FakeRetainDB (written from RetainDB's
published routes): the routes it speaks, tools, queue, recall, breaker."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plugins.memory.retaindb import RetainDBProvider
from tests.fakes.retaindb_server import FakeRetainDB

ALICE, BOB, CHAT = "telegram:1", "telegram:2", "telegram#chat:-100"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def rdb() -> Iterator[FakeRetainDB]:
    with FakeRetainDB() as fake:
        yield fake


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def open_rdb(
    home: Path,
    rdb: FakeRetainDB,
    user_key: str = ALICE,
    context: str = "background",
    session: str = "s1",
    **kwargs: Any,
) -> RetainDBProvider:
    provider = RetainDBProvider(environ={"RETAINDB_API_KEY": rdb.api_key}, **kwargs)
    provider.initialize(
        session,
        chorus_home=home,
        platform="telegram",
        user_key=user_key,
        agent_context=context,
        config={"base_url": rdb.base_url, "timeout": 5.0},
    )
    return provider


def call(provider: RetainDBProvider, tool: str, speaker: str | None = None, **args: Any) -> Any:
    extra = {} if speaker is None else {"speaker": speaker}
    return json.loads(provider.handle_tool_call(tool, args, **extra))


def test_sync_turn_writes_each_turn_once_in_order(home: Path, rdb: FakeRetainDB) -> None:
    provider = open_rdb(home, rdb)
    for i in range(3):
        provider.sync_turn(f"My lucky number is {i}.", f"Noted {i}.")
    provider.sync_turn("My lucky number is 1.", "Noted 1.")  # a re-delivered job
    assert rdb.memories_of(ALICE) == [
        f"User: My lucky number is {i}.\nAssistant: Noted {i}." for i in range(3)
    ]
    posted = [r for r in rdb.requests if r[0] == "POST"]
    assert [r[1] for r in posted] == ["/v1/memory"] * 3  # the re-delivered job was not sent
    assert posted[0][2] == {
        "project": "default",
        "user_id": ALICE,
        "session_id": "s1",
        "content": "User: My lucky number is 0.\nAssistant: Noted 0.",
        "memory_type": "event",
        "importance": 0.5,
        "write_mode": "sync",
    }
    assert provider.queue is not None and provider.queue.size() == 0
    db = sqlite3.connect(home / "providers" / "retaindb" / "queue.db")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()
    provider.shutdown()


def test_recall_on_the_next_session(home: Path, rdb: FakeRetainDB) -> None:
    worker = open_rdb(home, rdb)
    worker.sync_turn("My sister Anna lives in Lisbon.", "Lovely.")
    worker.queue_prefetch("where does Anna live")
    worker.shutdown()
    gateway = open_rdb(home, rdb, context="primary", session="s2")
    recall = gateway.prefetch("where does my sister Anna live")
    said = "- User: My sister Anna lives in Lisbon. Assistant: Lovely."
    assert recall == f"Relevant memories:\n{said}"  # the profile line is the same, kept once
    asked = [(r[0], r[1]) for r in rdb.requests[-2:]]
    assert asked == [("POST", "/v1/context/query"), ("GET", "/v1/memory/profile/telegram:1")]
    assert rdb.requests[-2][2]["session_id"] == "s2"
    assert rdb.requests[-1][2] == {"project": "default", "include_pending": "true"}
    rdb.fail(503, times=10)
    assert gateway.prefetch("Anna") == recall  # the warm recall while the server fails
    gateway.shutdown()


def test_tools(home: Path, rdb: FakeRetainDB) -> None:
    provider = open_rdb(home, rdb, context="primary")
    assert [s["name"] for s in provider.get_tool_schemas()] == [
        "retaindb_remember",
        "retaindb_search",
        "retaindb_profile",
        "retaindb_context",
        "retaindb_forget",
        "retaindb_file_put",
        "retaindb_file_get",
        "retaindb_file_list",
    ]
    assert call(provider, "retaindb_remember", content="My dog Biscuit is a beagle.") == {
        "success": True,
        "remembered": "My dog Biscuit is a beagle.",
    }
    kept = call(provider, "retaindb_remember", content="I prefer tea.", memory_type="preference")
    assert kept["success"] is True
    body = [r[2] for r in rdb.requests if r[:2] == ("POST", "/v1/memory")][-1]
    assert body["memory_type"] == "preference" and body["importance"] == 0.7
    assert body["project"] == "default" and body["user_id"] == ALICE
    odd = call(provider, "retaindb_remember", content="x", memory_type="odd")
    assert "memory_type" in odd["error"]
    assert "importance" in call(provider, "retaindb_remember", content="x", importance=3)["error"]
    found = call(provider, "retaindb_search", query="Biscuit beagle", limit=2)
    assert found["count"] == 1 and found["results"][0]["content"] == "My dog Biscuit is a beagle."
    searched = [r[2] for r in rdb.requests if r[:2] == ("POST", "/v1/memory/search")][-1]
    assert searched["top_k"] == 2 and searched["include_pending"] is True
    profile = call(provider, "retaindb_profile")
    assert [m["content"] for m in profile["memories"]] == [
        "My dog Biscuit is a beagle.",
        "I prefer tea.",
    ]
    context = call(provider, "retaindb_context", query="what tea do I like")
    assert [m["content"] for m in context["memories"]] == ["I prefer tea."]
    memory_id = found["results"][0]["id"]
    assert call(provider, "retaindb_forget", memory_id=memory_id)["deleted"] is True
    assert ("DELETE", f"/v1/memory/{memory_id}") in [r[:2] for r in rdb.requests]
    assert rdb.memories_of(ALICE) == ["I prefer tea."]
    assert "no memory" in call(provider, "retaindb_forget", memory_id=memory_id)["error"]

    put = call(provider, "retaindb_file_put", name="groceries.md", content="- milk\n- eggs")
    assert put == {"success": True, "name": "groceries.md", "size": 13}
    uploaded = [r[2] for r in rdb.requests if r[:2] == ("POST", "/v1/files")][-1]
    assert uploaded["path"] == "/chorus/telegram%3A1/groceries.md"
    assert uploaded["scope"] == "PROJECT"
    got = call(provider, "retaindb_file_get", name="groceries.md")
    assert got["content"] == "- milk\n- eggs"
    listed = call(provider, "retaindb_file_list")
    assert listed["count"] == 1 and listed["files"][0]["name"] == "groceries.md"
    for content in ("- bread", "- milk\n- eggs"):  # A, B, then A again: the last one wins
        call(provider, "retaindb_file_put", name="groceries.md", content=content)
    assert call(provider, "retaindb_file_get", name="groceries.md")["content"] == "- milk\n- eggs"
    assert len(rdb.files) == 1  # the older copies were deleted
    plan = call(provider, "retaindb_file_put", name="plan.md", content="Trip", ingest=True)
    assert plan["success"]
    assert rdb.ingested_files == [f["id"] for f in rdb.files.values() if f["name"] == "plan.md"]
    assert call(provider, "retaindb_remember", content="My dog Biscuit is a beagle.")["success"]
    assert rdb.memories_of(ALICE) == [
        "I prefer tea.",
        "My dog Biscuit is a beagle.",
    ]  # remembered again after forget
    assert call(provider, "retaindb_file_get", name="../etc/passwd")["success"] is False
    assert "no file" in call(provider, "retaindb_file_get", name="nope.md")["error"]
    assert call(provider, "retaindb_search", query="")["success"] is False
    provider.shutdown()


def test_users_and_speakers_stay_apart(home: Path, rdb: FakeRetainDB) -> None:
    alice = open_rdb(home, rdb)
    group = open_rdb(home, rdb, user_key=CHAT)
    alice.sync_turn("I keep three cats at home.", "Lovely.")
    group.sync_turn("I keep bees in the garden.", "Nice.", speaker=BOB)
    call(group, "retaindb_file_put", BOB, name="hives.md", content="two hives")
    bobs = "/chorus/telegram%3A2/"
    assert rdb.files_under(bobs) == {f"{bobs}hives.md": "two hives"}
    assert rdb.memories_of(BOB) == ["User: I keep bees in the garden.\nAssistant: Nice."]
    assert rdb.memories_of(CHAT) == []
    assert "bees" not in alice.prefetch("what do I keep at home in the garden")
    assert "cats" not in group.prefetch("what do I keep at home", speaker=BOB)
    assert "bees" in group.prefetch("what do I keep in the garden", speaker=BOB)
    assert call(alice, "retaindb_file_list")["count"] == 0
    assert call(alice, "retaindb_file_get", name="hives.md")["success"] is False
    cat = call(alice, "retaindb_search", query="cats home")["results"][0]["id"]
    refused = call(group, "retaindb_forget", BOB, memory_id=cat)  # RetainDB deletes by id alone
    assert refused["success"] is False and "belongs to this person" in refused["error"]
    assert len(rdb.memories_of(ALICE)) == 1
    alice.shutdown()
    group.shutdown()


def test_a_lost_answer_is_replayed_and_deduped(home: Path, rdb: FakeRetainDB) -> None:
    provider = open_rdb(home, rdb)
    rdb.lose_answers(1)  # stored, but the provider never hears so
    provider.sync_turn("I was born in Porto.", "Nice.")
    assert provider.queue is not None and provider.queue.size() == 1
    assert provider.flush() == 0
    assert rdb.memories_of(ALICE) == ["User: I was born in Porto.\nAssistant: Nice."]
    routes = [r[1] for r in rdb.requests]
    assert routes == ["/v1/memory", "/v1/memory/search"]  # found on the server, not sent again
    provider.shutdown()


def test_mirrored_memory_writes_are_queued_then_sent(home: Path, rdb: FakeRetainDB) -> None:
    provider = open_rdb(home, rdb, context="primary")
    provider.on_memory_write("add", "user", "Prefers metric units.")
    provider.on_memory_write("remove", "user", "Prefers metric units.")  # not mirrored
    assert provider.flush() == 0
    assert rdb.memories_of(ALICE) == ["Prefers metric units."]
    body = [r[2] for r in rdb.requests if r[:2] == ("POST", "/v1/memory")][-1]
    assert body["memory_type"] == "preference"
    provider.on_memory_write("add", "user", "Prefers metric units.")  # delivered again
    assert provider.flush() == 0
    assert rdb.memories_of(ALICE) == ["Prefers metric units."]
    provider.shutdown()


def test_a_dead_server_costs_nothing_and_opens_the_breaker(
    home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with FakeRetainDB() as gone:
        url, key = gone.base_url, gone.api_key
    provider = RetainDBProvider(environ={"RETAINDB_API_KEY": key}, clock=Clock())
    provider.initialize(
        "s1",
        chorus_home=home,
        platform="telegram",
        user_key=ALICE,
        agent_context="background",
        config={"base_url": url, "timeout": 1.0},
    )
    caplog.set_level(logging.WARNING)
    provider.sync_turn("My passport number is X1234567.", "Noted.")  # queued, no exception
    for _ in range(4):
        assert provider.prefetch("passport") == ""
    assert provider.breaker.is_open
    paused = call(provider, "retaindb_search", query="passport")
    assert paused["success"] is False and "paused" in paused["error"]
    remembered = call(provider, "retaindb_remember", content="I like tea.")
    assert remembered["success"] is True and remembered["queued"] is True
    assert provider.queue is not None and provider.queue.size() == 2
    assert "X1234567" not in caplog.text and key not in caplog.text
    provider.shutdown()

    with FakeRetainDB(api_key=key) as back:  # a server again: the next provider replays
        later = RetainDBProvider(environ={"RETAINDB_API_KEY": key})
        later.initialize(
            "s2",
            chorus_home=home,
            platform="telegram",
            user_key=ALICE,
            config={"base_url": back.base_url},
        )
        assert later.flush() == 0
        assert back.memories_of(ALICE) == [
            "User: My passport number is X1234567.\nAssistant: Noted.",
            "I like tea.",
        ]
        later.shutdown()


def test_errors_are_json_errors_and_a_key_is_required(home: Path, rdb: FakeRetainDB) -> None:
    provider = open_rdb(home, rdb, context="primary")
    rdb.fail(500, times=1)
    failed = call(provider, "retaindb_search", query="anything")
    assert failed["success"] is False and "HTTP 500" in failed["error"]
    assert provider.breaker.failures == 1
    assert call(provider, "retaindb_search", query="anything")["success"] is True
    assert provider.breaker.failures == 0
    provider.shutdown()
    keyless = RetainDBProvider(environ={})
    with pytest.raises(ValueError, match="RETAINDB_API_KEY"):
        keyless.initialize("s", chorus_home=home, platform="telegram", user_key=ALICE)

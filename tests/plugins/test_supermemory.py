"""The Supermemory provider through the official supermemory SDK against FakeSupermemory.

The fake is written from the SDK's routes (the old ``/v3/memories`` routes get
404 there). Tools, the durable session buffer and its ingest as a conversation
at session end, profile recall in the next session, mirrored writes of the
built-in memory, two-user isolation, and a dead backend (stopped or failing).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from plugins.memory import discover_memory_providers, load_memory_provider, resolve_config
from plugins.memory.supermemory import SupermemoryProvider
from plugins.memory.supermemory._config import DEFAULT_BASE_URL, DEFAULT_TIMEOUT, parse
from plugins.memory.supermemory._tags import container_tag
from tests.fakes.supermemory_server import FakeSupermemory

ALICE = "telegram:1"
BOB = "telegram:2"
SDK_ROUTES = {
    "POST /v3/documents",
    "POST /v4/search",
    "POST /v4/profile",
    "DELETE /v4/memories",
    "POST /v4/conversations",
}


@pytest.fixture
def sm() -> Iterator[FakeSupermemory]:
    with FakeSupermemory() as fake:
        yield fake


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def open_provider(
    home: Path,
    sm: FakeSupermemory,
    user_key: str = ALICE,
    session: str = "s1",
    context: str = "background",
    provider: SupermemoryProvider | None = None,
    api_key: str | None = None,
) -> SupermemoryProvider:
    key = sm.api_key if api_key is None else api_key
    provider = provider or SupermemoryProvider(environ={"SUPERMEMORY_API_KEY": key})
    provider.initialize(
        session,
        chorus_home=home,
        platform="telegram",
        user_key=user_key,
        agent_context=context,
        config={"base_url": sm.base_url, "timeout": 5.0},
        some_future_key=True,
    )
    return provider


def call(provider: SupermemoryProvider, name: str, **args: Any) -> dict[str, Any]:
    speaker = args.pop("speaker", None)
    extra = {} if speaker is None else {"speaker": speaker}
    result = json.loads(provider.handle_tool_call(name, args, session_id="s1", **extra))
    assert isinstance(result, dict)
    return result


def end_session(home: Path, sm: FakeSupermemory, user_key: str, session: str) -> None:
    provider = open_provider(home, sm, user_key, session)
    provider.on_session_end([])
    provider.shutdown()


# -- identity, discovery, configuration ---------------------------------------


def test_container_tags_are_injective_and_safe() -> None:
    keys = ["telegram:1", "telegram:1_", "telegram:1_3a", "telegram#chat:1", "slack:U1", "x:é"]
    keys += ["telegram:" + "9" * 200, "telegram:" + "9" * 201]
    tags = [container_tag(k) for k in keys]
    assert len(set(tags)) == len(keys)
    assert all(t.replace("_", "").isalnum() and t.isascii() and len(t) <= 100 for t in tags)
    assert container_tag("telegram:1") == "chorus_telegram_3a1"


def test_listed_available_and_schema(home: Path) -> None:
    info = {i.name: i for i in discover_memory_providers(home, "supermemory")}["supermemory"]
    assert (info.source, info.available, info.active, info.error) == ("bundled", True, True, None)
    provider = load_memory_provider("supermemory", home)
    assert provider.name == "supermemory" and provider.is_available()
    fields = {f["key"]: f for f in provider.get_config_schema()}
    assert set(fields) == {"base_url", "api_key", "timeout"}
    assert fields["api_key"]["secret"] and fields["api_key"]["env_var"] == "SUPERMEMORY_API_KEY"
    assert fields["base_url"]["default"] == DEFAULT_BASE_URL
    assert {t["name"] for t in provider.get_tool_schemas()} == {
        "supermemory_store",
        "supermemory_search",
        "supermemory_forget",
        "supermemory_profile",
    }


def test_settings_and_the_resolver(caplog: pytest.LogCaptureFixture) -> None:
    resolved = resolve_config(SupermemoryProvider(), {"timeout": "3"}, {"SUPERMEMORY_API_KEY": "k"})
    settings = parse(resolved, {})
    assert (settings.api_key, settings.timeout, settings.base_url) == ("k", 3.0, DEFAULT_BASE_URL)
    bad = parse({"timeout": 0, "base_url": "ftp://secret-host"}, {})
    assert (bad.timeout, bad.base_url) == (DEFAULT_TIMEOUT, DEFAULT_BASE_URL)
    assert "timeout" in caplog.text and "secret-host" not in caplog.text


def test_initialize_refuses_a_missing_key(home: Path, sm: FakeSupermemory) -> None:
    with pytest.raises(ValueError, match="SUPERMEMORY_API_KEY"):
        open_provider(home, sm, provider=SupermemoryProvider(environ={}))


# -- tools ------------------------------------------------------------------


def test_store_search_profile_forget(home: Path, sm: FakeSupermemory) -> None:
    alice = open_provider(home, sm, context="primary")
    stored = call(alice, "supermemory_store", content="My bike is a green Brompton.")
    assert stored["success"] and stored["document_id"]
    again = call(alice, "supermemory_store", content="My bike is a green Brompton.")
    assert again["document_id"] == stored["document_id"]  # same fact, same customId: not twice
    assert sm.memories_of(container_tag(ALICE)) == ["My bike is a green Brompton."]
    [document] = sm.documents_of(container_tag(ALICE))
    assert document["metadata"] == {"source": "chorus_tool"}

    found = call(alice, "supermemory_search", query="which bike", limit=3)
    assert found["success"] and found["count"] == 1
    memory_id = found["results"][0]["id"]
    assert "Brompton" in found["results"][0]["memory"]

    profile = call(alice, "supermemory_profile")
    assert profile == {"success": True, "static": ["My bike is a green Brompton."], "dynamic": []}
    focused = call(alice, "supermemory_profile", query="bike")
    assert [r["id"] for r in focused["results"]] == [memory_id]

    assert call(alice, "supermemory_forget", memory_id=memory_id)["forgotten"] is True
    assert sm.memories_of(container_tag(ALICE)) == []
    missing = call(alice, "supermemory_forget", memory_id=memory_id)
    assert missing["success"] is False and "belongs" in missing["error"]
    assert set(sm.paths()) == {"POST /v3/documents", "POST /v4/search", "POST /v4/profile"} | {
        "DELETE /v4/memories"
    }
    alice.shutdown()


def test_the_fake_speaks_the_sdk_routes_only(sm: FakeSupermemory) -> None:
    auth = {"Authorization": f"Bearer {sm.api_key}"}
    tag = container_tag(ALICE)
    with httpx.Client(base_url=sm.base_url, headers=auth) as http:
        old = [
            http.post("/v3/memories", json={"content": "x", "containerTags": [tag]}),
            http.post("/v3/search", json={"q": "x", "containerTags": [tag]}),
            http.get("/v3/memories/abc"),
            http.delete("/v3/memories/abc"),
        ]
        assert [r.status_code for r in old] == [404, 404, 404, 404]
        added = http.post("/v3/documents", json={"content": "Likes figs.", "containerTag": tag})
        assert added.status_code == 200 and added.json()["status"] == "queued"
    assert sm.memories_of(tag) == ["Likes figs."]


def test_tool_arguments_are_checked(home: Path, sm: FakeSupermemory) -> None:
    alice = open_provider(home, sm, context="primary")
    assert "query" in call(alice, "supermemory_search", query="  ")["error"]
    assert "limit" in call(alice, "supermemory_search", query="x", limit=99)["error"]
    assert "memory_id" in call(alice, "supermemory_forget", memory_id="../v3/search")["error"]
    assert "content" in call(alice, "supermemory_store", content=3)["error"]
    assert call(alice, "nope")["error"] == "unknown tool 'nope'"
    assert not any(path.endswith("search") for path in sm.paths())
    alice.shutdown()


# -- sync_turn, session end, recall -----------------------------------------


def test_turns_are_buffered_on_disk_and_ingested_once_in_order(
    home: Path, sm: FakeSupermemory
) -> None:
    worker = open_provider(home, sm)
    worker.sync_turn("I moved to Porto in May.", "Nice city.", session_id="s1")
    worker.sync_turn("I moved to Porto in May.", "Nice city.", session_id="s1")  # redelivered
    worker.sync_turn("My cat is called Mochi.", "Cute.", session_id="s1")
    worker.sync_turn("Wrong thing.", "Oops.", session_id="s1")
    worker.on_session_switch(
        "s1",
        rewound=True,
        reason="undo",
        withdrawn_turn={"turn": 3, "user_content": "Wrong thing.", "assistant_content": "Oops."},
    )
    assert sm.requests == []  # nothing sent before the session ends
    user_dir = home / "providers" / "supermemory" / "users" / "telegram" / "1"
    assert len(list((user_dir / "turns").glob("*.jsonl"))) == 1
    worker.shutdown()  # as a killed worker would lose its memory, not its files

    end_session(home, sm, ALICE, "s1")
    end_session(home, sm, ALICE, "s1")  # a repeated end job adds nothing
    [conversation] = sm.conversations_of(container_tag(ALICE))
    assert conversation["messages"] == [
        {"role": "user", "content": "I moved to Porto in May."},
        {"role": "assistant", "content": "Nice city."},
        {"role": "user", "content": "My cat is called Mochi."},
        {"role": "assistant", "content": "Cute."},
    ]
    assert conversation["metadata"] == {"source": "chorus", "chorus_session": "s1"}
    assert sm.paths() == ["POST /v4/conversations"]
    assert list((user_dir / "turns").iterdir()) == []


def test_recall_in_the_next_session_brings_the_profile(home: Path, sm: FakeSupermemory) -> None:
    worker = open_provider(home, sm)
    worker.sync_turn("My sister Ines lives in Porto.", "Good to know.")
    worker.on_session_end([])
    call(worker, "supermemory_store", content="Works as a luthier.")
    worker.shutdown()

    gateway = open_provider(home, sm, session="s2", context="primary")
    recalled = gateway.prefetch("Where does Ines live?")
    assert recalled == (
        "Lasting facts about this person:\n- Works as a luthier.\n\n"
        "Recent context:\n- My sister Ines lives in Porto."
    )
    assert sm.requests[-1][1:] == (
        "/v4/profile",
        {"containerTag": container_tag(ALICE), "q": "Where does Ines live?"},
    )
    assert gateway.prefetch("  ") == ""
    gateway.shutdown()


def test_queue_prefetch_warms_the_recall_used_when_the_backend_is_slow(
    home: Path, sm: FakeSupermemory
) -> None:
    worker = open_provider(home, sm)
    call(worker, "supermemory_store", content="The spare key is under the blue pot.")
    worker.queue_prefetch("where is the spare key")
    sm.fail(503, times=1)
    gateway = open_provider(home, sm, context="primary")
    assert gateway.prefetch("spare key") == (
        "Lasting facts about this person:\n- The spare key is under the blue pot."
    )
    worker.shutdown()
    gateway.shutdown()


def test_built_in_memory_writes_are_mirrored_as_documents(home: Path, sm: FakeSupermemory) -> None:
    alice = open_provider(home, sm, context="primary")
    alice.on_memory_write("add", "user", "Prefers tea to coffee.")
    alice.on_memory_write("add", "user", "Prefers tea to coffee.")  # the same write again
    alice.on_memory_write("remove", "user", "Prefers tea to coffee.")
    alice.on_memory_write("add", "memory", "   ")
    room = open_provider(home, sm, "telegram#chat:-100", context="flush")
    room.on_memory_write("replace", "user", "Plays the oboe.", metadata={"speaker": BOB})
    docs = sm.documents_of(container_tag(ALICE))
    assert [(d["content"], d["metadata"]) for d in docs] == [
        ("Prefers tea to coffee.", {"source": "chorus_memory", "target": "user"})
    ]
    assert sm.memories_of(container_tag(BOB)) == ["Plays the oboe."]
    assert "Prefers tea" in alice.prefetch("tea or coffee")
    sm.stop()
    alice.on_memory_write("add", "user", "Cycles to work.")  # a dead backend costs nothing
    alice.shutdown()
    room.shutdown()


# -- isolation -----------------------------------------------------------------


def test_two_users_never_see_each_other(home: Path, sm: FakeSupermemory) -> None:
    alice = open_provider(home, sm, ALICE)
    bob = open_provider(home, sm, BOB)
    alice.sync_turn("I love sushi and live in Lisbon.", "Noted.")
    bob.sync_turn("I hate sushi and live in Berlin.", "Noted.")
    alice.on_session_end([])
    bob.on_session_end([])
    mine = call(alice, "supermemory_store", content="Alice sushi secret: wasabi.")
    assert "Lisbon" in alice.prefetch("sushi city") and "Berlin" not in alice.prefetch("sushi")
    assert "Berlin" in bob.prefetch("sushi city") and "Lisbon" not in bob.prefetch("sushi")
    found = call(bob, "supermemory_search", query="sushi wasabi secret")
    assert all("wasabi" not in r["memory"] for r in found["results"])
    [alices] = call(alice, "supermemory_search", query="sushi wasabi secret")["results"][:1]
    assert mine["success"] and "wasabi" in alices["memory"]
    stolen = call(bob, "supermemory_forget", memory_id=alices["id"])
    assert stolen["success"] is False
    assert "Alice sushi secret: wasabi." in sm.memories_of(container_tag(ALICE))
    assert call(bob, "supermemory_profile")["static"] == []
    alice.shutdown()
    bob.shutdown()


def test_a_group_session_files_each_speaker_apart(home: Path, sm: FakeSupermemory) -> None:
    room = open_provider(home, sm, "telegram#chat:-100")
    room.sync_turn("I play the cello.", "Lovely.", speaker=ALICE)
    room.sync_turn("I play the drums.", "Loud.", speaker=BOB)
    room.on_session_end([])
    assert sm.memories_of(container_tag(ALICE)) == ["I play the cello."]
    assert sm.memories_of(container_tag(BOB)) == ["I play the drums."]
    [bobs] = sm.conversations_of(container_tag(BOB))
    assert [m["content"] for m in bobs["messages"]] == ["I play the drums.", "Loud."]
    assert "drums" not in room.prefetch("which instrument do I play", speaker=ALICE)
    assert "cello" in room.prefetch("which instrument do I play cello", speaker=ALICE)
    room.shutdown()


def test_a_wrong_key_is_refused_by_the_server(home: Path, sm: FakeSupermemory) -> None:
    intruder = open_provider(home, sm, api_key="sm-wrong")
    result = call(intruder, "supermemory_search", query="anything")
    assert result["success"] is False and "401" in result["error"]
    assert sm.unauthorised == 1 and sm.requests == []
    intruder.shutdown()


# -- a dead backend ----------------------------------------------------------


def test_failures_open_the_breaker_and_nothing_raises(
    home: Path, sm: FakeSupermemory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="plugins.memory.supermemory")
    now = [1000.0]
    provider = SupermemoryProvider(
        environ={"SUPERMEMORY_API_KEY": sm.api_key},
        clock=lambda: now[0],
        failure_threshold=3,
        cooldown=30,
    )
    alice = open_provider(home, sm, provider=provider)
    alice.sync_turn("My locker code is 4471.", "Got it.")
    sm.fail(500, times=3)
    assert alice.prefetch("locker code") == ""
    assert call(alice, "supermemory_search", query="locker")["success"] is False
    alice.on_session_end([])  # the ingest fails: the session stays on disk
    assert alice.breaker.is_open
    sent = len(sm.requests)
    assert "paused" in call(alice, "supermemory_store", content="x y")["error"]
    assert alice.prefetch("locker code") == ""
    assert len(sm.requests) == sent  # while open, nothing reaches the backend
    assert "4471" not in caplog.text.replace("<", "")  # no memory text in the logs

    now[0] += 31
    bob_session = open_provider(home, sm, session="s2", provider=provider)
    bob_session.on_session_end([])  # the next session end ingests the one left over
    assert not alice.breaker.is_open
    assert sm.memories_of(container_tag(ALICE)) == ["My locker code is 4471."]
    bob_session.shutdown()


def test_a_stopped_server_costs_no_exception(home: Path) -> None:
    sm = FakeSupermemory().start()
    alice = open_provider(home, sm, context="primary")
    sm.stop()
    assert alice.prefetch("anything at all") == ""
    result = call(alice, "supermemory_search", query="anything")
    assert result["success"] is False and "failed" in result["error"]
    alice.shutdown()


def test_a_hanging_server_is_cut_off_by_the_timeout(home: Path, sm: FakeSupermemory) -> None:
    provider = SupermemoryProvider(environ={"SUPERMEMORY_API_KEY": sm.api_key})
    provider.initialize(
        "s1",
        chorus_home=home,
        platform="telegram",
        user_key=ALICE,
        agent_context="primary",
        config={"base_url": sm.base_url, "timeout": 0.3},
    )
    sm.hang(3)
    result = call(provider, "supermemory_search", query="anything")
    assert result["success"] is False and "Timeout" in result["error"]
    assert provider.breaker.failures == 1
    sm.hang(0)
    provider.shutdown()

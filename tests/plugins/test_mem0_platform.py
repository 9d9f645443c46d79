"""The mem0 provider in platform mode: the real ``mem0.MemoryClient`` against FakeMem0Platform."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plugins.memory.mem0 import Mem0Provider
from tests.fakes.mem0_platform import FakeMem0Platform

ALICE = "telegram:1"
BOB = "telegram:2"
CHAT = "telegram#chat:-100"


@pytest.fixture
def platform() -> Iterator[FakeMem0Platform]:
    with FakeMem0Platform() as fake:
        yield fake


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def open_platform(
    home: Path,
    platform: FakeMem0Platform,
    user_key: str = ALICE,
    context: str = "background",
    **config: Any,
) -> Mem0Provider:
    provider = Mem0Provider(environ={"MEM0_API_KEY": platform.api_key})
    provider.initialize(
        "session-1",
        chorus_home=home,
        platform="telegram",
        user_key=user_key,
        agent_context=context,
        config={"mode": "platform", "host": platform.host, **config},
    )
    return provider


def call(provider: Mem0Provider, name: str, speaker: str | None = None, **args: Any) -> Any:
    extra = {} if speaker is None else {"speaker": speaker}
    return json.loads(provider.handle_tool_call(name, args, **extra))


@pytest.fixture
def alice(home: Path, platform: FakeMem0Platform) -> Iterator[Mem0Provider]:
    provider = open_platform(home, platform)
    yield provider
    provider.shutdown()


def test_initialize_does_not_touch_the_network(home: Path, platform: FakeMem0Platform) -> None:
    provider = open_platform(home, platform)
    assert platform.requests == []
    provider.shutdown()


def test_end_to_end(alice: Mem0Provider, platform: FakeMem0Platform) -> None:
    alice.sync_turn("I love dark roast coffee. My sister Anna lives in Lisbon.", "Noted!")
    assert platform.requests[0][:2] == ("GET", "/v1/ping/")
    method, path, body = platform.requests[1]
    assert (method, path, body["user_id"], body["infer"]) == (
        "POST",
        "/v3/memories/add/",
        ALICE,
        True,
    )
    assert body["messages"][1] == {"role": "assistant", "content": "Noted!"}
    assert platform.memories_of(ALICE) == [
        "I love dark roast coffee.",
        "My sister Anna lives in Lisbon.",
    ]
    alice.sync_turn("I love dark roast coffee. My sister Anna lives in Lisbon.", "Noted!")
    assert [p for _, p, _ in platform.requests].count("/v3/memories/add/") == 1

    assert alice.prefetch("what coffee do I love").startswith("- I love dark roast coffee.")
    search = platform.requests[-1]
    assert search[1] == "/v3/memories/search/" and search[2]["filters"] == {"user_id": ALICE}
    assert search[2]["top_k"] == 5

    found = call(alice, "mem0_search", query="where does my sister Anna live", limit=2)
    assert found["success"] and found["results"][0]["memory"] == "My sister Anna lives in Lisbon."
    memory_id = found["results"][0]["id"]
    added = call(alice, "mem0_add", content="My dog Biscuit is a beagle.")
    assert added["success"] and added["queued"] and added["event_id"]
    assert platform.requests[-1][2]["infer"] is False
    assert "My dog Biscuit is a beagle." in platform.memories_of(ALICE)
    assert call(alice, "mem0_add", content="My dog Biscuit is a beagle.")["duplicate"] is True
    updated = call(alice, "mem0_update", memory_id=memory_id, content="Anna moved to Porto.")
    assert updated == {"success": True, "id": memory_id, "memory": "Anna moved to Porto."}
    assert "Anna moved to Porto." in platform.memories_of(ALICE)
    assert call(alice, "mem0_delete", memory_id=memory_id)["deleted"] is True
    assert "Anna moved to Porto." not in platform.memories_of(ALICE)
    missing = call(alice, "mem0_delete", memory_id=memory_id)
    assert missing["success"] is False and "no memory" in missing["error"]


def test_users_and_speakers_stay_apart(home: Path, platform: FakeMem0Platform) -> None:
    alice = open_platform(home, platform)
    group = open_platform(home, platform, user_key=CHAT)
    try:
        alice.sync_turn("I keep three cats at home.", "Lovely.")
        group.sync_turn("I keep bees in the garden.", "Nice.", speaker=BOB)
        assert platform.memories_of(BOB) == ["I keep bees in the garden."]
        assert "bees" not in alice.prefetch("what animals do I keep at home")
        assert "cats" not in group.prefetch("what animals do I keep at home", speaker=BOB)
        assert "bees" in group.prefetch("what do I keep in the garden", speaker=BOB)
        assert group.prefetch("what do I keep in the garden") == ""
        cat_id = call(alice, "mem0_search", query="cats at home")["results"][0]["id"]
        for name, args in (("mem0_delete", {}), ("mem0_update", {"content": "I keep dogs."})):
            refused = call(group, name, BOB, memory_id=cat_id, **args)
            assert refused["success"] is False and "no memory" in refused["error"]
        assert platform.memories_of(ALICE) == ["I keep three cats at home."]
    finally:
        alice.shutdown()
        group.shutdown()


def test_a_leaky_platform_still_shows_only_your_memories(
    alice: Mem0Provider, platform: FakeMem0Platform, home: Path
) -> None:
    bob = open_platform(home, platform, user_key=BOB)
    try:
        bob.sync_turn("My bank PIN is 4242 and I bank in Berlin.", "Noted.")
        alice.sync_turn("I bank in Lisbon with a small bank.", "Noted.")
        platform.leaky = True  # the platform forgets to filter by user
        assert "4242" not in alice.prefetch("my bank PIN")
        found = call(alice, "mem0_search", query="bank PIN Berlin", limit=10)
        assert found["success"] and all("4242" not in r["memory"] for r in found["results"])
        assert found["count"] == 1
    finally:
        bob.shutdown()


def test_platform_errors_are_json_errors(alice: Mem0Provider, platform: FakeMem0Platform) -> None:
    alice.sync_turn("I like green tea.", "Noted.")
    platform.fail(503, times=1)
    failed = call(alice, "mem0_search", query="tea")
    assert failed["success"] is False and "backend failed" in failed["error"]
    assert alice.breaker.failures == 1
    assert call(alice, "mem0_search", query="green tea")["count"] == 1
    assert alice.breaker.failures == 0


def test_a_wrong_api_key_is_a_failure_not_a_crash(home: Path, platform: FakeMem0Platform) -> None:
    provider = Mem0Provider(environ={"MEM0_API_KEY": "wrong"})
    provider.initialize(
        "s",
        chorus_home=home,
        platform="telegram",
        user_key=ALICE,
        agent_context="primary",
        config={"mode": "platform", "host": platform.host},
    )
    try:
        result = call(provider, "mem0_search", query="anything")
        assert result["success"] is False and "backend failed" in result["error"]
        assert provider.prefetch("anything") == ""
        assert "wrong" not in json.dumps(result)
    finally:
        provider.shutdown()

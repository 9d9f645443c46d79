"""The openviking provider through real httpx against FakeOpenViking: tools, batches, commits."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plugins.memory.openviking import OpenVikingProvider
from plugins.memory.openviking._ops import ov_user
from tests.fakes.openviking_server import FakeOpenViking

ALICE, BOB, CHAT = "telegram:1", "telegram:2", "telegram#chat:-100"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def ov() -> Iterator[FakeOpenViking]:
    with FakeOpenViking() as fake:
        yield fake


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def open_ov(
    home: Path,
    ov: FakeOpenViking,
    user_key: str = ALICE,
    context: str = "background",
    session: str = "s1",
    **kwargs: Any,
) -> OpenVikingProvider:
    provider = OpenVikingProvider(environ={"OPENVIKING_API_KEY": ov.api_key}, **kwargs)
    provider.initialize(
        session,
        chorus_home=home,
        platform="telegram",
        user_key=user_key,
        agent_context=context,
        config={"base_url": ov.base_url, "timeout": 5.0},
    )
    return provider


def call(provider: OpenVikingProvider, name: str, speaker: str | None = None, **args: Any) -> Any:
    extra = {} if speaker is None else {"speaker": speaker}
    return json.loads(provider.handle_tool_call(name, args, **extra))


def pending(home: Path) -> list[Path]:
    return sorted((home / "providers" / "openviking").glob("*/*/*/pending/*.json"))


def test_initialize_and_sync_turn_do_not_touch_the_network(home: Path, ov: FakeOpenViking) -> None:
    provider = open_ov(home, ov)
    provider.sync_turn("I grow tomatoes on the balcony.", "Nice!")
    assert ov.requests == []
    batch = list((home / "providers" / "openviking" / "users" / "telegram" / "1").glob("batches/*"))
    assert len(batch) == 1 and "tomatoes" in batch[0].read_text()
    provider.shutdown()


def test_sync_turn_batches_in_order_and_commits_at_session_end(
    home: Path, ov: FakeOpenViking
) -> None:
    provider = open_ov(home, ov)
    turns = [(f"Turn {i}: my favourite number is {i}.", f"Noted {i}.") for i in range(4)]
    for user, assistant in turns:
        provider.sync_turn(user, assistant)
    provider.sync_turn(*turns[1])  # a re-delivered job: not added twice
    provider.on_session_end([])
    expected = [
        m
        for u, a in turns
        for m in ({"role": "user", "content": u}, {"role": "assistant", "content": a})
    ]
    assert ov.commits == [(ov_user(ALICE), ov.commits[0][1], expected)]
    assert ov.commits[0][1].startswith("chorus-")
    assert pending(home) == []
    provider.on_session_end([])  # nothing left: no second commit
    assert len(ov.commits) == 1
    provider.shutdown()


def test_recall_on_the_next_session(home: Path, ov: FakeOpenViking) -> None:
    worker = open_ov(home, ov)
    worker.sync_turn("My sister Anna lives in Lisbon.", "Lovely city.")
    worker.on_session_end([])
    worker.shutdown()
    worker = open_ov(home, ov, session="s2")
    worker.queue_prefetch("where does Anna live")
    gateway = open_ov(home, ov, context="primary", session="s2")
    assert gateway.prefetch("where does my sister Anna live") == "- My sister Anna lives in Lisbon."
    search = [r for r in ov.requests if r[1] == "/api/v1/search/find"][-1]
    assert search[2] == ov_user(ALICE)
    assert search[3]["target_uri"] == f"viking://user/{ov_user(ALICE)}"
    ov.fail(503, times=10)
    assert gateway.prefetch("Anna Lisbon") == "- My sister Anna lives in Lisbon."  # warm cache
    gateway.shutdown()
    worker.shutdown()


def test_tools(home: Path, ov: FakeOpenViking) -> None:
    provider = open_ov(home, ov, context="primary")
    assert [s["name"] for s in provider.get_tool_schemas()] == [
        "viking_search",
        "viking_read",
        "viking_list",
        "viking_remember",
        "viking_forget",
        "viking_commit",
    ]
    remembered = call(provider, "viking_remember", content="My dog Biscuit is a beagle.")
    assert remembered == {"success": True, "remembered": "My dog Biscuit is a beagle."}
    found = call(provider, "viking_search", query="what breed is Biscuit", limit=3)
    assert found["success"] and found["count"] == 1
    uri = found["results"][0]["uri"]
    assert found["results"][0]["abstract"] == "My dog Biscuit is a beagle."
    listed = call(provider, "viking_list")
    assert listed["entries"] == [{"uri": uri, "is_dir": False}]
    assert call(provider, "viking_read", uri=uri)["content"] == "My dog Biscuit is a beagle."
    alias = call(provider, "viking_read", uri="viking://~/memories/" + uri.rsplit("/", 1)[1])
    assert alias == {"success": True, "uri": uri, "content": "My dog Biscuit is a beagle."}
    refused = call(provider, "viking_read", uri="viking://resources/shared.md")
    assert refused["success"] is False and "own space" in refused["error"]
    other = call(provider, "viking_read", uri=f"viking://user/{ov_user(BOB)}/memories/x.md")
    assert other["success"] is False and "own space" in other["error"]
    assert call(provider, "viking_forget", uri=uri)["deleted"] is True
    assert ov.memories_of(ov_user(ALICE)) == []
    gone = call(provider, "viking_forget", uri=uri)
    assert gone["success"] is False and "nothing at" in gone["error"]
    assert call(provider, "viking_search", query="")["success"] is False
    again = call(provider, "viking_remember", content="My dog Biscuit is a beagle.")
    assert again["success"] and ov.memories_of(ov_user(ALICE)) == ["My dog Biscuit is a beagle."]
    assert call(provider, "viking_forget", uri=call(provider, "viking_list")["entries"][0]["uri"])

    provider.sync_turn("I collect stamps from Peru.", "Fun.")  # the batch, committed on demand
    assert call(provider, "viking_commit") == {"success": True, "committed": 2}
    assert "I collect stamps from Peru." in ov.memories_of(ov_user(ALICE))
    assert call(provider, "viking_commit") == {"success": True, "committed": 0}
    provider.shutdown()


def test_users_and_speakers_stay_apart(home: Path, ov: FakeOpenViking) -> None:
    alice = open_ov(home, ov)
    group = open_ov(home, ov, user_key=CHAT)
    alice.sync_turn("I keep three cats at home.", "Lovely.")
    group.sync_turn("I keep bees in the garden.", "Nice.", speaker=BOB)
    alice.on_session_end([])
    group.on_session_end([{"role": "user", "content": "x", "speaker": BOB}])
    assert ov.memories_of(ov_user(BOB)) == ["I keep bees in the garden."]
    assert ov.memories_of(ov_user(ALICE)) == ["I keep three cats at home."]
    assert ov.memories_of(ov_user(CHAT)) == []
    assert "bees" not in alice.prefetch("what do I keep in the garden at home")
    assert "cats" not in group.prefetch("what do I keep at home", speaker=BOB)
    assert "bees" in group.prefetch("what do I keep in the garden", speaker=BOB)
    bees = call(group, "viking_search", BOB, query="bees garden")["results"][0]["uri"]
    assert bees.startswith(f"viking://user/{ov_user(BOB)}/")
    # Bob's URI is refused to Alice before it reaches the server: Bob's memory stays his
    before = len(ov.requests)
    for tool in ("viking_read", "viking_forget", "viking_list"):
        assert call(alice, tool, uri=bees)["success"] is False
    assert len(ov.requests) == before and ov.memories_of(ov_user(BOB))
    assert ov_user("a:b_c") != ov_user("a_b:c")
    alice.shutdown()
    group.shutdown()


def test_an_interrupted_commit_is_finished_without_doubling(home: Path, ov: FakeOpenViking) -> None:
    worker = open_ov(home, ov)
    for i in range(3):
        worker.sync_turn(f"Fact number {i} is about rivers.", f"ok {i}")
    ov.fail_path("/messages", after=2)  # two messages arrive, then the server dies
    with pytest.raises(RuntimeError):
        worker.on_session_end([])
    assert len(pending(home)) == 1 and ov.commits == []
    worker.shutdown()  # as if the worker died here

    ov.fail_path(None)
    fresh = open_ov(home, ov, session="s2")
    fresh.sync_turn("Something new.", "ok")  # the next call finishes the old commit
    assert pending(home) == []
    assert len(ov.commits) == 1
    sent = [m["content"] for m in ov.commits[0][2]]
    assert sent == [x for i in range(3) for x in (f"Fact number {i} is about rivers.", f"ok {i}")]

    # killed after the commit was acknowledged but before the marker was removed
    fresh.sync_turn("Another fact about lakes.", "ok")
    saved = home / "saved-marker.json"
    fresh_batches = fresh._batches
    assert fresh_batches is not None
    marker = fresh_batches.seal(ALICE, "s2")
    assert marker is not None
    shutil.copy(marker.path, saved)
    fresh.on_session_end([])
    assert len(ov.commits) == 2
    shutil.copy(saved, marker.path)
    again = open_ov(home, ov, session="s3")
    again.queue_prefetch("lakes")
    assert pending(home) == [] and len(ov.commits) == 2  # the server's count said: done
    for p in (fresh, again):
        p.shutdown()


def test_a_dead_server_costs_nothing_and_opens_the_breaker(
    home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with FakeOpenViking() as gone:
        url, key = gone.base_url, gone.api_key
    clock = Clock()
    provider = OpenVikingProvider(environ={"OPENVIKING_API_KEY": key}, clock=clock)
    provider.initialize(
        "s1",
        chorus_home=home,
        platform="telegram",
        user_key=ALICE,
        agent_context="primary",
        config={"base_url": url, "timeout": 1.0},
    )
    caplog.set_level(logging.WARNING)
    provider.sync_turn("My passport number is X1234567.", "Noted.")  # local: works
    for _ in range(5):
        assert provider.prefetch("passport") == ""
    assert provider.breaker.is_open
    paused = call(provider, "viking_search", query="passport")
    assert paused["success"] is False and "paused" in paused["error"]
    with pytest.raises(RuntimeError, match="paused"):
        provider.on_session_end([])
    assert len(pending(home)) == 1  # kept for later
    assert "X1234567" not in caplog.text and key not in caplog.text
    provider.shutdown()


def test_server_errors_and_a_wrong_key_are_json_errors(home: Path, ov: FakeOpenViking) -> None:
    provider = open_ov(home, ov, context="primary")
    ov.fail(500, times=1)
    failed = call(provider, "viking_search", query="anything at all")
    assert failed["success"] is False and "HTTP 500" in failed["error"]
    assert provider.breaker.failures == 1
    assert call(provider, "viking_search", query="anything at all")["success"] is True
    assert provider.breaker.failures == 0
    provider.shutdown()
    wrong = OpenVikingProvider(environ={"OPENVIKING_API_KEY": "wrong"})
    wrong.initialize(
        "s", chorus_home=home, platform="telegram", user_key=ALICE, config={"base_url": ov.base_url}
    )
    result = call(wrong, "viking_search", query="anything")
    assert result["success"] is False and "HTTP 401" in result["error"]
    assert "wrong" not in json.dumps(result)
    wrong.shutdown()


def test_a_server_that_ignores_the_user_header_gets_nothing(
    home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """OpenViking in api_key mode with a user key: every request lands in that key's
    one space. chorus commits nothing there and finds nothing of anyone else."""
    with FakeOpenViking(honour_user=False) as ov:
        provider = open_ov(home, ov, context="primary")
        provider.sync_turn("My locker code is 4411.", "Noted.")
        caplog.set_level(logging.WARNING)
        with pytest.raises(RuntimeError, match="user not honoured"):
            provider.on_session_end([])
        assert ov.commits == [] and len(pending(home)) == 1  # kept, not sent to the wrong space
        assert "auth_mode = trusted" in caplog.text and "4411" not in caplog.text
        ov.add_memory("default", "Someone else's secret plan.")
        found = call(provider, "viking_search", query="secret plan")
        assert found["success"] is False and "403" in found["error"]
        assert provider.prefetch("secret plan") == ""
        provider.shutdown()


def undo(provider: OpenVikingProvider, user: str, assistant: str, **extra: Any) -> None:
    withdrawn = {"turn": 2, "user_content": user, "assistant_content": assistant, **extra}
    provider.on_session_switch(
        "s1", parent_session_id="s1", rewound=True, reason="undo", withdrawn_turn=withdrawn
    )


def test_a_turn_withdrawn_before_the_commit_never_reaches_openviking(
    home: Path, ov: FakeOpenViking
) -> None:
    provider = open_ov(home, ov)
    provider.sync_turn("I live in Porto.", "Nice.")
    provider.sync_turn("My PIN is 4321.", "Noted.")
    undo(provider, "My PIN is 4321.", "Noted.")
    undo(provider, "My PIN is 4321.", "Noted.")  # a re-delivered rewind job: nothing more
    provider.sync_turn("I work in Braga.", "Cool.")
    provider.on_session_end([])
    [(_, _, messages)] = ov.commits
    assert [m["content"] for m in messages] == [
        "I live in Porto.",
        "Nice.",
        "I work in Braga.",
        "Cool.",
    ]
    provider.shutdown()


def test_in_a_group_undo_takes_the_turn_of_the_person_who_said_it(
    home: Path, ov: FakeOpenViking
) -> None:
    group = open_ov(home, ov, user_key=CHAT)
    group.sync_turn("I keep bees.", "Nice.", speaker=ALICE)
    group.sync_turn("I keep bees.", "Nice.", speaker=BOB)  # the same words, another person
    undo(group, "I keep bees.", "Nice.", speaker=BOB)
    group.on_session_end([])
    assert ov.memories_of(ov_user(ALICE)) == ["I keep bees."]
    assert ov.memories_of(ov_user(BOB)) == []
    group.shutdown()

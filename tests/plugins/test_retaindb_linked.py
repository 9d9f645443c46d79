"""A linked person's RetainDB recall reads the memories of the accounts linked into it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plugins.memory.retaindb import RetainDBProvider
from tests.fakes.retaindb_server import FakeRetainDB
from tests.plugins.linked_people import link

ANN_TG, ANN_SLACK, BOB = "telegram:1", "slack:U1", "telegram:2"


@pytest.fixture
def rdb() -> Iterator[FakeRetainDB]:
    with FakeRetainDB() as fake:
        yield fake


def session(
    home: Path, rdb: FakeRetainDB, user_key: str, name: str, **extra: Any
) -> RetainDBProvider:
    provider = RetainDBProvider(environ={"RETAINDB_API_KEY": rdb.api_key})
    provider.initialize(
        name,
        chorus_home=home,
        platform="slack",
        user_key=user_key,
        agent_context="primary",
        config={"base_url": rdb.base_url, "timeout": 5.0},
        **extra,
    )
    return provider


def call(provider: RetainDBProvider, name: str, **args: Any) -> Any:
    return json.loads(provider.handle_tool_call(name, args))


def test_after_a_link_the_other_account_recalls_what_the_first_told(
    tmp_path: Path, rdb: FakeRetainDB
) -> None:
    home = tmp_path / "home"
    ann = session(home, rdb, ANN_TG, "s1")
    assert call(ann, "retaindb_remember", content="My dog Biscuit is a beagle.")["success"]
    ann.shutdown()
    bob = session(home, rdb, BOB, "s2")
    assert call(bob, "retaindb_remember", content="My dog Rex is a poodle.")["success"]
    bob.shutdown()

    person, accounts = link(tmp_path / "state.db", ANN_TG, ANN_SLACK)
    after = session(home, rdb, person, "s3", account_keys=accounts)
    recalled = after.prefetch("what breed is my dog Biscuit")
    assert "beagle" in recalled and "poodle" not in recalled
    found = call(after, "retaindb_search", query="dog Biscuit beagle")["results"]
    assert [hit["content"] for hit in found] == ["My dog Biscuit is a beagle."]
    profile = call(after, "retaindb_profile")["memories"]
    assert [m["content"] for m in profile] == ["My dog Biscuit is a beagle."]
    context = call(after, "retaindb_context", query="dog Biscuit")["memories"]
    assert "beagle" in json.dumps(context) and "poodle" not in json.dumps(context)
    # the account's memory is read, never forgotten, from the person's session
    assert call(after, "retaindb_forget", memory_id=found[0]["id"])["success"] is False
    # writes go to the person's own memories
    call(after, "retaindb_remember", content="I moved to Porto.")
    assert rdb.memories_of(person) == ["I moved to Porto."]
    assert rdb.memories_of(ANN_TG) == ["My dog Biscuit is a beagle."]
    after.shutdown()
    # an unlinked account sees nothing of the person's, nor the person of it
    bob = session(home, rdb, BOB, "s4")
    assert "beagle" not in bob.prefetch("dog Biscuit beagle")
    assert "Porto" not in bob.prefetch("moved Porto")
    bob.shutdown()


def test_a_chat_session_never_reads_a_members_memories(tmp_path: Path, rdb: FakeRetainDB) -> None:
    home = tmp_path / "home"
    ann = session(home, rdb, ANN_TG, "s1")
    call(ann, "retaindb_remember", content="My dog Biscuit is a beagle.")
    ann.shutdown()
    room = session(home, rdb, "slack#chat:C1", "s2", account_keys=[ANN_TG])
    assert room.prefetch("dog Biscuit beagle") == ""
    room.shutdown()

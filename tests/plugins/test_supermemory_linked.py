"""A linked person's Supermemory recall reads the container tags of its accounts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plugins.memory.supermemory import SupermemoryProvider
from plugins.memory.supermemory._tags import container_tag
from tests.fakes.supermemory_server import FakeSupermemory
from tests.plugins.linked_people import link

ANN_TG, ANN_SLACK, BOB = "telegram:1", "slack:U1", "telegram:2"


@pytest.fixture
def sm() -> Iterator[FakeSupermemory]:
    with FakeSupermemory() as fake:
        yield fake


def session(
    home: Path, sm: FakeSupermemory, user_key: str, name: str, **extra: Any
) -> SupermemoryProvider:
    provider = SupermemoryProvider(environ={"SUPERMEMORY_API_KEY": sm.api_key})
    provider.initialize(
        name,
        chorus_home=home,
        platform="slack",
        user_key=user_key,
        agent_context="background",
        config={"base_url": sm.base_url, "timeout": 5.0},
        **extra,
    )
    return provider


def call(provider: SupermemoryProvider, name: str, **args: Any) -> Any:
    return json.loads(provider.handle_tool_call(name, args))


def test_after_a_link_the_other_account_recalls_what_the_first_told(
    tmp_path: Path, sm: FakeSupermemory
) -> None:
    home = tmp_path / "home"
    call(
        session(home, sm, ANN_TG, "s1"), "supermemory_store", content="My bike is a green Brompton."
    )
    call(session(home, sm, BOB, "s2"), "supermemory_store", content="My bike is a red Bianchi.")

    person, accounts = link(tmp_path / "state.db", ANN_TG, ANN_SLACK)
    after = session(home, sm, person, "s3", account_keys=accounts)
    recalled = after.prefetch("which bike do I ride")
    assert "Brompton" in recalled and "Bianchi" not in recalled
    found = call(after, "supermemory_search", query="which bike")["results"]
    assert [r["memory"] for r in found] == ["My bike is a green Brompton."]
    assert call(after, "supermemory_profile")["static"] == ["My bike is a green Brompton."]
    # the account's memory is read, never forgotten, from the person's session
    assert call(after, "supermemory_forget", memory_id=found[0]["id"])["success"] is False
    # writes go to the person's own tag
    call(after, "supermemory_store", content="I moved to Porto.")
    assert sm.memories_of(container_tag(person)) == ["I moved to Porto."]
    # an unlinked account sees nothing of the person's, nor the person of it
    bob = session(home, sm, BOB, "s4")
    assert "Brompton" not in bob.prefetch("which bike") and "Porto" not in bob.prefetch("moved")
    assert "Bianchi" not in json.dumps(call(after, "supermemory_search", query="red bike"))


def test_a_chat_session_never_reads_a_members_tag(tmp_path: Path, sm: FakeSupermemory) -> None:
    home = tmp_path / "home"
    call(
        session(home, sm, ANN_TG, "s1"), "supermemory_store", content="My bike is a green Brompton."
    )
    room = session(home, sm, "slack#chat:C1", "s2", account_keys=[ANN_TG])
    assert room.prefetch("which bike") == ""

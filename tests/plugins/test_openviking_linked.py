"""A linked person's OpenViking recall reads the spaces of the accounts linked into it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plugins.memory.openviking import OpenVikingProvider
from plugins.memory.openviking._ops import ov_user
from tests.fakes.openviking_server import FakeOpenViking
from tests.plugins.linked_people import link

ANN_TG, ANN_SLACK, BOB = "telegram:1", "slack:U1", "telegram:2"


@pytest.fixture
def ov() -> Iterator[FakeOpenViking]:
    with FakeOpenViking() as fake:
        yield fake


def session(
    home: Path, ov: FakeOpenViking, user_key: str, name: str, **extra: Any
) -> OpenVikingProvider:
    provider = OpenVikingProvider(environ={"OPENVIKING_API_KEY": ov.api_key})
    provider.initialize(
        name,
        chorus_home=home,
        platform="slack",
        user_key=user_key,
        agent_context="primary",
        config={"base_url": ov.base_url, "timeout": 5.0},
        **extra,
    )
    return provider


def call(provider: OpenVikingProvider, name: str, **args: Any) -> Any:
    return json.loads(provider.handle_tool_call(name, args))


def test_after_a_link_the_other_account_recalls_what_the_first_told(
    tmp_path: Path, ov: FakeOpenViking
) -> None:
    home = tmp_path / "home"
    assert call(
        session(home, ov, ANN_TG, "s1"), "viking_remember", content="My dog Biscuit is a beagle."
    )["success"]
    assert call(session(home, ov, BOB, "s2"), "viking_remember", content="My dog Rex is a poodle.")[
        "success"
    ]

    person, accounts = link(tmp_path / "state.db", ANN_TG, ANN_SLACK)
    after = session(home, ov, person, "s3", account_keys=accounts)
    recalled = after.prefetch("what breed is my dog Biscuit")
    assert "beagle" in recalled and "poodle" not in recalled
    found = call(after, "viking_search", query="dog beagle poodle")
    assert [r["abstract"] for r in found["results"]] == ["My dog Biscuit is a beagle."]
    uri = found["results"][0]["uri"]
    assert uri.startswith(f"viking://user/{ov_user(ANN_TG)}/")
    assert call(after, "viking_read", uri=uri)["content"] == "My dog Biscuit is a beagle."
    # a forget acts on the person's own space only; the account's memory stays
    assert call(after, "viking_forget", uri=uri)["success"] is False
    # writes go to the person's own space
    call(after, "viking_remember", content="I moved to Porto.")
    assert ov.commits[-1][0] == ov_user(person)
    # an unlinked account reads nothing of the person's, and the person nothing of it
    bob = session(home, ov, BOB, "s4")
    assert "beagle" not in bob.prefetch("dog Biscuit beagle")
    assert call(bob, "viking_read", uri=uri)["success"] is False
    assert "poodle" not in after.prefetch("dog Rex poodle")


def test_a_chat_session_never_reads_a_members_space(tmp_path: Path, ov: FakeOpenViking) -> None:
    home = tmp_path / "home"
    call(session(home, ov, ANN_TG, "s1"), "viking_remember", content="My dog Biscuit is a beagle.")
    room = session(home, ov, "slack#chat:C1", "s2", account_keys=[ANN_TG])
    assert room.prefetch("dog Biscuit beagle") == ""

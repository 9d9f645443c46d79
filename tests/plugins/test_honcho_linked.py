"""A linked person's Honcho recall reads the peers of the accounts linked into it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plugins.memory.honcho import HonchoProvider
from plugins.memory.honcho._config import honcho_name
from tests.fakes.honcho_server import FakeHoncho
from tests.plugins.linked_people import link

ANN_TG, ANN_SLACK, BOB = "telegram:1", "slack:U1", "telegram:2"


@pytest.fixture
def fake() -> Iterator[FakeHoncho]:
    with FakeHoncho() as server:
        yield server


def session(home: Path, fake: FakeHoncho, user_key: str, name: str, **extra: Any) -> HonchoProvider:
    provider = HonchoProvider(environ={"HONCHO_API_KEY": fake.api_key or ""})
    provider.initialize(
        name,
        chorus_home=home,
        platform="slack",
        user_key=user_key,
        agent_context="background",
        config={"base_url": fake.base_url},
        **extra,
    )
    return provider


def call(provider: HonchoProvider, name: str, **args: Any) -> Any:
    return json.loads(provider.handle_tool_call(name, args))


def test_after_a_link_the_other_account_recalls_what_the_first_told(
    tmp_path: Path, fake: FakeHoncho
) -> None:
    home = tmp_path / "home"
    session(home, fake, ANN_TG, "s1").sync_turn("I bank in Lisbon with a small bank.", "Noted.")
    session(home, fake, BOB, "s2").sync_turn("My bank PIN is 4242 and I bank in Berlin.", "Ok.")
    fake.set_card(honcho_name(ANN_TG), ["Lives in Lisbon"])

    person, accounts = link(tmp_path / "state.db", ANN_TG, ANN_SLACK)
    after = session(home, fake, person, "s3", account_keys=accounts)
    recalled = after.prefetch("where do I bank")
    assert "Lisbon" in recalled and "Berlin" not in recalled and "4242" not in recalled
    found = call(after, "honcho_search", query="bank Lisbon Berlin", limit=20)["results"]
    assert found and all("Berlin" not in r["conclusion"] for r in found)
    assert any("Lisbon" in r["conclusion"] for r in found)
    assert call(after, "honcho_profile")["card"] == ["Lives in Lisbon"]
    # the account's conclusions are read, never deleted, from the person's session
    assert call(after, "honcho_conclude", delete_id=found[0]["id"])["success"] is False
    # writes go to the person's own peer
    call(after, "honcho_conclude", conclusion="Ann moved to Porto.")
    assert fake.conclusions_of(honcho_name(person)) == ["Ann moved to Porto."]
    assert "Ann moved to Porto." not in fake.conclusions_of(honcho_name(ANN_TG))
    # an unlinked account sees nothing of the person's, nor the person of it
    bob = session(home, fake, BOB, "s4")
    assert "Lisbon" not in bob.prefetch("where do I bank") and "Porto" not in bob.prefetch("Porto")
    assert "4242" not in json.dumps(call(after, "honcho_search", query="bank PIN", limit=20))


def test_a_chat_session_never_reads_a_members_peer(tmp_path: Path, fake: FakeHoncho) -> None:
    home = tmp_path / "home"
    session(home, fake, ANN_TG, "s1").sync_turn("I bank in Lisbon with a small bank.", "Noted.")
    room = session(home, fake, "slack#chat:C1", "s2", account_keys=[ANN_TG])
    assert "Lisbon" not in room.prefetch("where do I bank")

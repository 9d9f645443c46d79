"""A linked person's Hindsight recall reads the banks of the accounts linked into it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plugins.memory.hindsight import HindsightProvider
from tests.fakes.hindsight_server import FakeHindsight
from tests.plugins.linked_people import link

ANN_TG, ANN_SLACK, BOB = "telegram:1", "slack:U1", "slack:U2"


@pytest.fixture
def fake() -> Iterator[FakeHindsight]:
    with FakeHindsight() as server:
        yield server


def session(
    home: Path, fake: FakeHindsight, user_key: str, name: str, **extra: Any
) -> HindsightProvider:
    provider = HindsightProvider(environ={"HINDSIGHT_API_KEY": fake.api_key or ""})
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


def call(provider: HindsightProvider, name: str, **args: Any) -> Any:
    return json.loads(provider.handle_tool_call(name, args))


def test_after_a_link_the_other_account_recalls_what_the_first_told(
    tmp_path: Path, fake: FakeHindsight
) -> None:
    home = tmp_path / "home"
    before = session(home, fake, ANN_TG, "s1")
    before.sync_turn("I moved to Lisbon last spring.", "Nice.")
    before.on_session_end([])
    bob = session(home, fake, BOB, "s2")
    bob.sync_turn("I live in Berlin.", "Ok.")
    bob.on_session_end([])

    person, accounts = link(tmp_path / "state.db", ANN_TG, ANN_SLACK)
    assert sorted(accounts) == [ANN_SLACK, ANN_TG]
    after = session(home, fake, person, "s3", account_keys=accounts)
    recalled = after.prefetch("where did I move Lisbon")
    assert "Lisbon" in recalled and "Berlin" not in recalled
    found = call(after, "hindsight_recall", query="Lisbon Berlin")["results"]
    assert [r["text"] for r in found] == ["I moved to Lisbon last spring."]
    # writes go to the person's own bank, never an account's
    call(after, "hindsight_retain", content="My dog is called Rex.")
    retained = [bank for bank, _ in fake.calls("retain")]
    assert retained[-1] == after.settings.bank_id(person)
    # an unlinked account sees nothing of the person, nor the person of it
    assert "Lisbon" not in session(home, fake, BOB, "s4").prefetch("Lisbon moved")
    assert "Berlin" not in after.prefetch("Berlin live")


def test_a_chat_session_never_reads_a_members_bank(tmp_path: Path, fake: FakeHindsight) -> None:
    home = tmp_path / "home"
    ann = session(home, fake, ANN_TG, "s1")
    ann.sync_turn("I moved to Lisbon last spring.", "Nice.")
    ann.on_session_end([])
    room = session(home, fake, "slack#chat:C1", "s2", account_keys=[ANN_TG])
    assert room.prefetch("Lisbon moved") == ""

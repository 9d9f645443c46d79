"""A linked person's ByteRover recall asks the context trees of its accounts too (fake brv)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from plugins.memory.byterover import ByteRoverProvider
from tests.fakes.byterover_brv import calls, entries, install_fake_brv, path_with
from tests.plugins.linked_people import link
from tests.plugins.test_byterover import workdir

ANN_TG, ANN_SLACK, ANN_DISCORD, BOB = "telegram:1", "slack:U1", "discord:9", "telegram:2"


@pytest.fixture
def brv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = install_fake_brv(tmp_path / "bin")
    monkeypatch.setenv("PATH", path_with(directory))
    return directory


def session(home: Path, user_key: str, name: str, **extra: Any) -> ByteRoverProvider:
    provider = ByteRoverProvider()
    provider.initialize(
        name,
        chorus_home=home,
        platform="slack",
        user_key=user_key,
        agent_context="background",
        config={},
        **extra,
    )
    return provider


def call(provider: ByteRoverProvider, name: str, **args: Any) -> Any:
    return json.loads(provider.handle_tool_call(name, args, session_id="s1"))


def test_after_a_link_the_other_account_recalls_what_the_first_told(
    tmp_path: Path, brv: Path
) -> None:
    home = tmp_path / "home"
    session(home, ANN_TG, "s1").sync_turn("My sourdough starter is called Bubbles.", "Cute.")
    session(home, BOB, "s2").sync_turn("My sourdough starter is called Blob.", "Ok.")

    person = link(tmp_path / "state.db", ANN_TG, ANN_SLACK)[0]
    assert link(tmp_path / "state.db", ANN_SLACK, ANN_DISCORD)[0] == person
    with_discord = link(tmp_path / "state.db", ANN_DISCORD, ANN_TG)[1]
    assert sorted(with_discord) == [ANN_DISCORD, ANN_SLACK, ANN_TG]
    after = session(home, person, "s3", account_keys=with_discord)
    recalled = after.prefetch("what is my sourdough starter called")
    assert "Bubbles" in recalled and "Blob" not in recalled
    assert "No matching knowledge" not in recalled  # the person's own empty tree says nothing
    answer = call(after, "brv_query", query="sourdough starter name")["answer"]
    assert "Bubbles" in answer and "Blob" not in answer
    # accounts without a tree are not asked: brv never ran in their directories
    asked = {run["cwd"] for run in calls(brv)}
    assert (
        str(workdir(home, ANN_SLACK)) not in asked and str(workdir(home, ANN_DISCORD)) not in asked
    )
    # writes go to the person's own tree
    call(after, "brv_curate", content="My bread tin is blue.")
    assert entries(workdir(home, person)) == ["My bread tin is blue."]
    assert "blue" not in "".join(entries(workdir(home, ANN_TG)))
    # an unlinked account sees nothing of the person's, nor the person of it
    bob = session(home, BOB, "s4")
    assert "Bubbles" not in bob.prefetch("sourdough starter") and "blue" not in bob.prefetch(
        "bread tin"
    )


def test_a_chat_session_never_reads_a_members_tree(tmp_path: Path, brv: Path) -> None:
    home = tmp_path / "home"
    session(home, ANN_TG, "s1").sync_turn("My sourdough starter is called Bubbles.", "Cute.")
    room = session(home, "slack#chat:C1", "s2", account_keys=[ANN_TG])
    assert "Bubbles" not in room.prefetch("what is my sourdough starter called")

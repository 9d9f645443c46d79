"""Two people never meet in Hindsight: a bank each, in one-to-one and in group sessions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plugins.memory.hindsight import HindsightProvider
from tests.fakes.hindsight_server import FakeHindsight
from tests.plugins.test_hindsight import open_provider

ANN, BOB, ROOM = "slack:U1", "slack:U2", "slack#chat:C2"
ANN_BANK, BOB_BANK = "chorus-slack_3aU1", "chorus-slack_3aU2"


@pytest.fixture
def fake() -> Iterator[FakeHindsight]:
    with FakeHindsight() as server:
        yield server


def call(provider: HindsightProvider, name: str, speaker: str | None = None, **args: Any) -> Any:
    extra = {} if speaker is None else {"speaker": speaker}
    return json.loads(provider.handle_tool_call(name, args, **extra))


def test_two_users_never_see_each_other(tmp_path: Path, fake: FakeHindsight) -> None:
    home = tmp_path / "home"
    ann = open_provider(home, fake, user_key=ANN, session="ann")
    bob = open_provider(home, fake, user_key=BOB, session="bob")
    ann.sync_turn("I love sushi and olives. I moved to Lisbon.", "Nice.")
    bob.sync_turn("I hate sushi and olives. I live in Berlin.", "Ok.")
    ann.on_session_end([])
    bob.on_session_end([])
    assert {bank for bank, _ in fake.calls("retain")} == {ANN_BANK, BOB_BANK}
    assert fake.facts(ANN_BANK) == ["I love sushi and olives.", "I moved to Lisbon."]

    probe = "sushi olives Lisbon Berlin"
    mine = ann.prefetch(probe)
    assert "Lisbon" in mine and "love" in mine and "Berlin" not in mine and "hate" not in mine
    his = bob.prefetch(probe)
    assert "Berlin" in his and "Lisbon" not in his
    found = call(ann, "hindsight_recall", query=probe)["results"]
    assert {r["text"] for r in found} == {"I love sushi and olives.", "I moved to Lisbon."}
    assert "Berlin" not in call(ann, "hindsight_reflect", query=probe)["answer"]
    call(bob, "hindsight_retain", content="My dog is called Rex.")
    assert "Rex" not in json.dumps(call(ann, "hindsight_recall", query="dog called Rex"))
    assert {bank for bank, _ in fake.calls("recall")} == {ANN_BANK, BOB_BANK}
    # each warm recall lives with its own person
    ann.queue_prefetch(probe)
    bob.queue_prefetch(probe)
    fake.stop()
    assert "Berlin" not in ann.prefetch(probe) and "Lisbon" in ann.prefetch(probe)
    assert "Lisbon" not in bob.prefetch(probe)


def test_a_group_session_keeps_each_speaker_in_their_own_bank(
    tmp_path: Path, fake: FakeHindsight
) -> None:
    home = tmp_path / "home"
    room = open_provider(home, fake, user_key=ROOM, session="room")
    room.sync_turn("I keep three cats at home.", "Lovely.", speaker=ANN)
    room.sync_turn("I keep bees in the garden.", "Nice.", speaker=BOB)
    room.on_session_end([])
    retained = {bank: body["items"][0]["content"] for bank, body in fake.calls("retain")}
    assert retained == {
        ANN_BANK: "User: I keep three cats at home.\nAssistant: Lovely.",
        BOB_BANK: "User: I keep bees in the garden.\nAssistant: Nice.",
    }
    assert "bees" not in room.prefetch("what do I keep", speaker=ANN)
    assert "cats" not in room.prefetch("what do I keep", speaker=BOB)
    assert "bees" in room.prefetch("what do I keep in the garden", speaker=BOB)
    assert room.prefetch("what do I keep in the garden") == ""  # the chat's own bank is empty
    stored = call(room, "hindsight_retain", speaker=BOB, content="My dog is called Rex.")
    assert stored["success"] and "Rex" not in json.dumps(
        call(room, "hindsight_recall", speaker=ANN, query="dog called Rex")
    )
    # the speaker is not remembered between calls
    assert call(room, "hindsight_recall", query="dog called Rex")["count"] == 0
    assert "user key" in call(room, "hindsight_recall", speaker="nobody", query="x")["error"]

"""Per-user isolation of the mem0 provider (oss mode): nobody's memories reach anybody else.

Two people in their own sessions, and one group chat whose session holds the
chat's shared key while each turn names its ``speaker``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plugins.memory.mem0 import Mem0Provider
from tests.fakes import FakeOpenAI
from tests.fakes.mem0_platform import mem0_responder
from tests.plugins.test_mem0 import open_provider

ALICE = "telegram:1"
BOB = "telegram:2"
CHAT = "telegram#chat:-100"
ALICE_SAYS = "I love sushi and olives. I moved to Lisbon last spring."
BOB_SAYS = "I hate sushi and olives. I live in Berlin near the river."
PROBE = "sushi olives Lisbon Berlin"


@pytest.fixture
def providers(tmp_path: Path, server: FakeOpenAI) -> Iterator[dict[str, Mem0Provider]]:
    server.responder(mem0_responder)
    home = tmp_path / "home"
    opened = {key: open_provider(home, server, user_key=key) for key in (ALICE, BOB, CHAT)}
    yield opened
    for provider in opened.values():
        provider.shutdown()


def call(provider: Mem0Provider, name: str, speaker: str | None = None, **args: Any) -> Any:
    extra = {} if speaker is None else {"speaker": speaker}
    return json.loads(provider.handle_tool_call(name, args, **extra))


def seen(provider: Mem0Provider, speaker: str | None = None) -> str:
    """Everything one provider lets out about memories, for ``speaker``, as one text."""
    return "\n".join(
        [
            provider.prefetch(PROBE, speaker=speaker),
            json.dumps(call(provider, "mem0_search", speaker, query=PROBE, limit=20)),
        ]
    )


def ids(provider: Mem0Provider, speaker: str | None = None) -> list[str]:
    found = call(provider, "mem0_search", speaker, query=PROBE, limit=20)
    return [r["id"] for r in found["results"]]


def test_two_users_never_see_each_other(providers: dict[str, Mem0Provider]) -> None:
    alice, bob = providers[ALICE], providers[BOB]
    alice.sync_turn(ALICE_SAYS, "Noted.")
    bob.sync_turn(BOB_SAYS, "Noted.")
    assert "love sushi" in seen(alice) and "Lisbon" in seen(alice)
    assert "hate sushi" not in seen(alice) and "Berlin" not in seen(alice)
    assert "hate sushi" in seen(bob) and "Berlin" in seen(bob)
    assert "love sushi" not in seen(bob) and "Lisbon" not in seen(bob)
    assert seen(providers[CHAT]).strip() == '{"success": true, "results": [], "count": 0}'


def test_ids_of_another_user_are_refused(providers: dict[str, Mem0Provider]) -> None:
    alice, bob = providers[ALICE], providers[BOB]
    alice.sync_turn(ALICE_SAYS, "Noted.")
    alice_ids = ids(alice)
    assert alice_ids
    for memory_id in alice_ids:
        updated = call(bob, "mem0_update", memory_id=memory_id, content="I love Berlin.")
        deleted = call(bob, "mem0_delete", memory_id=memory_id)
        assert updated["success"] is False and "no memory" in updated["error"]
        assert deleted["success"] is False and "no memory" in deleted["error"]
    assert ids(alice) == alice_ids
    assert "love sushi" in seen(alice)


def test_a_group_keeps_each_speaker_apart(providers: dict[str, Mem0Provider]) -> None:
    group = providers[CHAT]
    group.sync_turn(ALICE_SAYS, "Noted, Alice.", speaker=ALICE)
    group.sync_turn(BOB_SAYS, "Noted, Bob.", speaker=BOB)
    by_alice, by_bob = seen(group, ALICE), seen(group, BOB)
    assert "love sushi" in by_alice and "Berlin" not in by_alice
    assert "hate sushi" in by_bob and "Lisbon" not in by_bob
    assert "sushi" not in seen(group)  # the chat's own key holds neither
    # the speakers' memories are their own, also outside the group
    assert "Lisbon" in seen(providers[ALICE]) and "Berlin" in seen(providers[BOB])
    for memory_id in ids(group, ALICE):
        refused = call(group, "mem0_delete", BOB, memory_id=memory_id)
        assert refused["success"] is False
    assert len(ids(group, ALICE)) == 2
    added = call(group, "mem0_add", BOB, content="Bob's locker code is 9090.")
    assert added["success"]
    assert "9090" in providers[BOB].prefetch("what is my locker code")
    assert "9090" not in group.prefetch("what is my locker code", speaker=ALICE)
    assert "9090" not in providers[ALICE].prefetch("what is my locker code")


def test_a_speaker_is_not_remembered_between_calls(providers: dict[str, Mem0Provider]) -> None:
    group = providers[CHAT]
    group.sync_turn(ALICE_SAYS, "Noted.", speaker=ALICE)
    group.sync_turn("The team picked Friday for the picnic.", "Great.")
    assert "picnic" not in seen(group, ALICE)
    assert "picnic" in group.prefetch("when is the picnic")
    assert "Lisbon" not in group.prefetch("Lisbon sushi")


def test_undo_in_a_group_removes_what_that_speaker_said(
    providers: dict[str, Mem0Provider],
) -> None:
    group = providers[CHAT]
    group.sync_turn("I collect old maps of Lisbon.", "Nice.", speaker=ALICE)
    group.sync_turn(BOB_SAYS, "Noted.", speaker=BOB)
    withdrawn = {
        "turn": 1,
        "user_content": "I collect old maps of Lisbon.",
        "assistant_content": "Nice.",
    }
    # as the rewind job sends it: the withdrawn turn does not say who spoke
    group.on_session_switch("session-1", rewound=True, reason="undo", withdrawn_turn=withdrawn)
    assert "maps" not in group.prefetch("old maps of Lisbon", speaker=ALICE)
    assert "Berlin" in seen(group, BOB)
    group.sync_turn("I collect old maps of Lisbon.", "Nice.", speaker=ALICE)  # said again
    assert "maps" in group.prefetch("old maps of Lisbon", speaker=ALICE)

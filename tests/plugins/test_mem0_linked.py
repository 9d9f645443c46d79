"""A linked person's mem0 recall reads the memories of the accounts linked into it (oss mode)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from plugins.memory.mem0 import Mem0Provider
from tests.fakes import FakeOpenAI
from tests.fakes.mem0_platform import mem0_responder
from tests.plugins.linked_people import link
from tests.plugins.test_mem0 import oss_config

ANN_TG, ANN_SLACK, BOB = "telegram:1", "slack:U1", "telegram:2"
PROBE = "sushi olives Lisbon Berlin"


def session(home: Path, server: FakeOpenAI, user_key: str, name: str, **extra: Any) -> Mem0Provider:
    provider = Mem0Provider()
    provider.initialize(
        name,
        chorus_home=home,
        platform="slack",
        user_key=user_key,
        agent_context="background",
        config=oss_config(server),
        **extra,
    )
    return provider


def call(provider: Mem0Provider, name: str, **args: Any) -> Any:
    return json.loads(provider.handle_tool_call(name, args))


def test_after_a_link_the_other_account_recalls_what_the_first_told(
    tmp_path: Path, server: FakeOpenAI
) -> None:
    server.responder(mem0_responder)
    home = tmp_path / "home"
    ann = session(home, server, ANN_TG, "s1")
    ann.sync_turn("I love sushi and olives. I moved to Lisbon last spring.", "Noted.")
    ann.shutdown()
    bob = session(home, server, BOB, "s2")
    bob.sync_turn("I hate sushi and olives. I live in Berlin near the river.", "Noted.")
    bob.shutdown()

    person, accounts = link(tmp_path / "state.db", ANN_TG, ANN_SLACK)
    after = session(home, server, person, "s3", account_keys=accounts)
    recalled = after.prefetch(PROBE)
    assert "Lisbon" in recalled and "Berlin" not in recalled
    found = call(after, "mem0_search", query=PROBE, limit=20)["results"]
    assert found and all("Berlin" not in r["memory"] for r in found)
    assert any("Lisbon" in r["memory"] for r in found)
    # an account's memory is read, never changed, from the person's session
    refused = call(after, "mem0_delete", memory_id=found[0]["id"])
    assert refused["success"] is False
    # writes go to the person's own memories
    assert call(after, "mem0_add", content="My dog is called Rex.")["success"]
    ann_again = session(home, server, ANN_TG, "s4")
    assert "Rex" not in json.dumps(call(ann_again, "mem0_search", query="dog Rex", limit=20))
    # an unlinked account sees nothing of the person's, nor the person of it
    bob = session(home, server, BOB, "s5")
    assert "Lisbon" not in bob.prefetch(PROBE) and "Rex" not in bob.prefetch("dog Rex")
    for provider in (after, ann_again, bob):
        provider.shutdown()


def test_a_chat_session_never_reads_a_members_memories(tmp_path: Path, server: FakeOpenAI) -> None:
    server.responder(mem0_responder)
    home = tmp_path / "home"
    ann = session(home, server, ANN_TG, "s1")
    ann.sync_turn("I love sushi and olives. I moved to Lisbon last spring.", "Noted.")
    ann.shutdown()
    room = session(home, server, "slack#chat:C1", "s2", account_keys=[ANN_TG])
    assert room.prefetch(PROBE) == ""
    room.shutdown()

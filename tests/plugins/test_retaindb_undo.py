"""/undo with the retaindb provider: the withdrawn turn leaves RetainDB, whenever it was sent.

Sent already, it is deleted on the server (the memory id the server gave it is
kept in the queue database); still queued, it never leaves; the server down
for the delete, the delete waits in the durable queue and happens once it is
back, in order after the turn. In a group the turn is taken from the memory of
the person who said it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plugins.memory.retaindb import RetainDBProvider
from tests.fakes.retaindb_server import FakeRetainDB

ALICE, BOB, CHAT = "telegram:1", "telegram:2", "telegram#chat:-100"


@pytest.fixture
def rdb() -> Iterator[FakeRetainDB]:
    with FakeRetainDB() as fake:
        yield fake


def open_rdb(
    home: Path, url: str, key: str, user_key: str = ALICE, session: str = "s1"
) -> RetainDBProvider:
    provider = RetainDBProvider(environ={"RETAINDB_API_KEY": key})
    provider.initialize(
        session,
        chorus_home=home,
        platform="telegram",
        user_key=user_key,
        agent_context="background",
        config={"base_url": url, "timeout": 1.0},
    )
    return provider


def undo(provider: RetainDBProvider, user: str, assistant: str, **extra: Any) -> None:
    provider.on_session_switch(
        "s1",
        parent_session_id="s1",
        rewound=True,
        reason="undo",
        withdrawn_turn={"turn": 2, "user_content": user, "assistant_content": assistant, **extra},
    )


def test_a_sent_turn_is_deleted_on_the_server(tmp_path: Path, rdb: FakeRetainDB) -> None:
    provider = open_rdb(tmp_path, rdb.base_url, rdb.api_key)
    provider.sync_turn("I live in Porto.", "Nice.")
    provider.sync_turn("Actually I live in Braga.", "Noted.")
    undo(provider, "Actually I live in Braga.", "Noted.")
    assert rdb.memories_of(ALICE) == ["User: I live in Porto.\nAssistant: Nice."]
    assert "Braga" not in provider.prefetch("where do I live Braga")
    undo(provider, "Actually I live in Braga.", "Noted.")  # a re-delivered rewind job
    assert rdb.memories_of(ALICE) == ["User: I live in Porto.\nAssistant: Nice."]
    provider.sync_turn("Actually I live in Braga.", "Noted.")  # said again after the undo
    assert len(rdb.memories_of(ALICE)) == 2
    assert provider.queue is not None and provider.queue.size() == 0
    provider.shutdown()


def test_a_turn_still_queued_never_leaves(tmp_path: Path) -> None:
    with FakeRetainDB() as gone:
        url, key = gone.base_url, gone.api_key
    provider = open_rdb(tmp_path, url, key)
    provider.sync_turn("I live in Porto.", "Nice.")
    provider.sync_turn("My PIN is 4321.", "Noted.")
    undo(provider, "My PIN is 4321.", "Noted.")
    assert provider.queue is not None and provider.queue.size() == 1
    provider.shutdown()
    with FakeRetainDB(api_key=key) as back:
        later = open_rdb(tmp_path, back.base_url, key, session="s2")
        assert later.flush() == 0
        assert back.memories_of(ALICE) == ["User: I live in Porto.\nAssistant: Nice."]
        assert not [r for r in back.requests if r[0] == "DELETE"]
        later.shutdown()


def test_the_delete_waits_in_the_queue_while_the_server_is_down(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FakeRetainDB() as first:
        key = first.api_key
        provider = open_rdb(home, first.base_url, key)
        provider.sync_turn("My PIN is 4321.", "Noted.")
        kept = list(first.memories.get(("default", ALICE), []))
        provider.shutdown()
    assert [m["content"] for m in kept] == ["User: My PIN is 4321.\nAssistant: Noted."]
    down = open_rdb(home, first.base_url, key)  # the server is gone now
    undo(down, "My PIN is 4321.", "Noted.")
    assert down.queue is not None and down.queue.size() == 1  # the delete, kept
    down.shutdown()
    with FakeRetainDB(api_key=key) as back:
        back.memories[("default", ALICE)] = kept  # the same server, up again
        later = open_rdb(home, back.base_url, key, session="s2")
        assert later.flush() == 0
        assert back.memories_of(ALICE) == []
        deletes = [r[1] for r in back.requests if r[0] == "DELETE"]
        assert deletes == [f"/v1/memory/{kept[0]['id']}"]
        later.shutdown()


def test_in_a_group_the_turn_leaves_the_speakers_memory(tmp_path: Path, rdb: FakeRetainDB) -> None:
    group = open_rdb(tmp_path, rdb.base_url, rdb.api_key, user_key=CHAT)
    group.sync_turn("I keep bees.", "Nice.", speaker=ALICE)
    group.sync_turn("I keep bees.", "Nice.", speaker=BOB)  # the same words, another person
    undo(group, "I keep bees.", "Nice.", speaker=BOB)
    assert rdb.memories_of(BOB) == []
    assert rdb.memories_of(ALICE) == ["User: I keep bees.\nAssistant: Nice."]
    group.shutdown()

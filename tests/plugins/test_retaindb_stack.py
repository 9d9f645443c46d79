"""The retaindb provider in the whole stack (agents, in-process jobs) against FakeRetainDB:
turns reach RetainDB's published routes, /undo deletes by the id it gave, the next
session recalls through the context query, and an ended session is handed over."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.fakes import FakeOpenAI
from tests.fakes.retaindb_server import FakeRetainDB
from tests.integration.conftest import Stack, build_stack, close_stack, stack_settings

USER = "telegram:1"


@pytest.fixture
def rdb() -> Iterator[FakeRetainDB]:
    with FakeRetainDB() as fake:
        yield fake


@pytest.fixture
async def rdb_stack(
    chorus_home: Path, server: FakeOpenAI, rdb: FakeRetainDB
) -> AsyncIterator[Stack]:
    chorus_home.mkdir(mode=0o700)
    (chorus_home / ".env").write_text(f"RETAINDB_API_KEY={rdb.api_key}\n")
    (chorus_home / ".env").chmod(0o600)
    settings = stack_settings(
        chorus_home,
        server,
        CHORUS_MEMORY__PROVIDER="retaindb",
        CHORUS_MEMORY__PROVIDERS__RETAINDB__BASE_URL=rdb.base_url,
        CHORUS_MEMORY__PROVIDERS__RETAINDB__PROJECT="chorus-test",
        CHORUS_MEMORY__PREFETCH_TIMEOUT="10",
    )
    built = await build_stack(settings)
    yield built
    await close_stack(built)


def recalled(server: FakeOpenAI) -> str:
    user = [m for m in server.requests[-1]["messages"] if m["role"] == "user"][-1]["content"]
    return str(user).partition("<memory-context>")[2]


async def test_turns_undo_recall_and_the_session_end_on_the_published_routes(
    rdb_stack: Stack, server: FakeOpenAI, rdb: FakeRetainDB
) -> None:
    agent = await rdb_stack.agent("s1", USER)
    for text in ("I sail a boat called Nimbus.", "Nimbus is moored in Brest."):
        server.reply("ok")
        await agent.run_turn(text)
    assert rdb_stack.background.queue.flush(20)
    stored = rdb.memories.get(("chorus-test", USER), [])
    assert [m["content"] for m in stored] == [
        "User: I sail a boat called Nimbus.\nAssistant: ok",
        "User: Nimbus is moored in Brest.\nAssistant: ok",
    ]
    assert await agent.undo_last_turn() == "Nimbus is moored in Brest."
    assert rdb_stack.background.queue.flush(20)
    assert rdb.memories_of(USER, "chorus-test") == [
        "User: I sail a boat called Nimbus.\nAssistant: ok"
    ]
    deletes = [r[1] for r in rdb.requests if r[0] == "DELETE"]
    assert deletes == [f"/v1/memory/{stored[1]['id']}"]

    later = await rdb_stack.agent("s2", USER)
    server.reply("ok")
    await later.run_turn("What is my boat Nimbus called?")
    assert "I sail a boat called Nimbus." in recalled(server)
    assert "Brest" not in recalled(server)
    assert {"/v1/context/query", f"/v1/memory/profile/{USER}"} <= {r[1] for r in rdb.requests}
    assert rdb_stack.background.queue.flush(20)

    rdb_stack.background.scheduler.end_session("s1", "idle")
    assert rdb_stack.background.queue.flush(20)
    [ended] = [s for s in rdb.sessions if s["session_id"] == "s1"]
    assert ended["user_id"] == USER and ended["project"] == "chorus-test"
    assert ended["messages"] == [
        {"role": "user", "content": "I sail a boat called Nimbus."},
        {"role": "assistant", "content": "ok"},
    ]
    assert all("/v1/users/" not in r[1] for r in rdb.requests)
    await agent.close()
    await later.close()

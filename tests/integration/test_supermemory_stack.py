"""``memory.provider: supermemory`` on the whole in-process stack: agents, jobs, the real SDK.

The operator's setup is the one the README gives (the key in ``CHORUS_HOME/.env``,
the rest under ``memory.providers.supermemory``); the Supermemory behind it is
FakeSupermemory, written from the supermemory 3.x SDK's routes.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from plugins.memory.supermemory._tags import container_tag
from tests.fakes import FakeOpenAI
from tests.fakes.supermemory_server import FakeSupermemory
from tests.integration.conftest import Stack, build_stack, close_stack, stack_settings

TAG = container_tag("telegram:1")
SDK_ROUTES = {
    "POST /v3/documents",
    "POST /v4/search",
    "POST /v4/profile",
    "DELETE /v4/memories",
    "POST /v4/conversations",
}


@pytest.fixture
def sm() -> Iterator[FakeSupermemory]:
    with FakeSupermemory() as fake:
        yield fake


@pytest.fixture
async def stack(chorus_home: Path, server: FakeOpenAI, sm: FakeSupermemory) -> AsyncIterator[Stack]:
    chorus_home.mkdir(mode=0o700)
    secrets = chorus_home / ".env"
    secrets.write_text(f"SUPERMEMORY_API_KEY={sm.api_key}\n")
    secrets.chmod(0o600)
    settings = stack_settings(
        chorus_home,
        server,
        CHORUS_MEMORY__PROVIDER="supermemory",
        CHORUS_MEMORY__PROVIDERS__SUPERMEMORY__BASE_URL=sm.base_url,
        CHORUS_MEMORY__PREFETCH_TIMEOUT="10",  # recall is asserted, not raced
    )
    built = await build_stack(settings)
    yield built
    await close_stack(built)


def last_user_text(request: dict[str, object]) -> str:
    messages = request["messages"]
    assert isinstance(messages, list)
    return str([m for m in messages if m["role"] == "user"][-1]["content"])


async def test_memory_writes_session_ingest_and_profile_recall(
    stack: Stack, server: FakeOpenAI, sm: FakeSupermemory
) -> None:
    agent = await stack.agent("s1")
    server.reply("Noted!")
    await agent.run_turn("My sister Anna lives in Lisbon.")
    assert stack.background.queue.flush(10)
    assert "POST /v4/conversations" not in sm.paths()  # buffered until the session ends

    server.tool_call("memory", {"action": "add", "target": "user", "content": "Keeps bees"})
    server.reply("Saved.")
    await agent.run_turn("Remember that I keep bees.")
    assert [(d["content"], d["metadata"]) for d in sm.documents_of(TAG)] == [
        ("Keeps bees", {"source": "chorus_memory", "target": "user"})
    ]

    server.tool_call("memory", {"action": "add", "target": "user", "content": "Sister in Lisbon"})
    stack.background.scheduler.end_session("s1", "idle")
    assert stack.background.queue.flush(10)
    [conversation] = sm.conversations_of(TAG)
    assert conversation["messages"] == [
        {"role": "user", "content": "My sister Anna lives in Lisbon."},
        {"role": "assistant", "content": "Noted!"},
        {"role": "user", "content": "Remember that I keep bees."},
        {"role": "assistant", "content": "Saved."},
    ]
    assert "Sister in Lisbon" in [d["content"] for d in sm.documents_of(TAG)]  # the flush's write

    nxt = await stack.agent("s2")
    server.tool_call("supermemory_search", {"query": "bees"})
    server.reply("You keep bees.")
    assert await nxt.run_turn("What do I keep at home?") == "You keep bees."
    recalled = last_user_text(server.requests[-2])
    assert "Lasting facts about this person:\n- Keeps bees\n- Sister in Lisbon" in recalled
    assert "Recent context:\n- My sister Anna lives in Lisbon." in recalled
    tool_result = next(m for m in server.requests[-1]["messages"] if m["role"] == "tool")
    assert json.loads(tool_result["content"])["results"][0]["memory"] == "Keeps bees"
    assert set(sm.paths()) <= SDK_ROUTES
    assert sm.memories_of(container_tag("telegram:2")) == []

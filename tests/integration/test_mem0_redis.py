"""``memory.provider: mem0`` (the real mem0ai OSS backend) on the gateway's stack with
`chorus worker` processes, against the tests' fake OpenAI (chat and embeddings).

The worker syncs each turn into mem0 (its extraction call goes to the fake); the
next turn's recall, asked in the gateway process, finds what that person said —
and never what somebody else in the same channel said, with ``sessions.scope:
user`` (a session each); with ``chat`` (one session, the speaker named per turn)
what a member said goes to their own memory, which the shared session never recalls
nor searches with ``mem0_search``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.agent import Agent
from agent.context import SessionContext
from memory.paths import ChatRef, UserKey
from tests.fakes import FakeOpenAI, RedisServer
from tests.fakes.mem0_platform import mem0_responder
from tests.integration.conftest import Stack, build_stack, close_stack, stack_settings
from tests.integration.test_providers_redis import ChorusWorkers, env_for, wait_idle

pytest_plugins = ["tests.fakes.redis_fixtures"]

PROBE = "sushi, olives, Lisbon or Berlin?"
"""A question whose words meet both people's facts (the fake embeds bags of words)."""

MEM0 = {
    "CHORUS_MEMORY__PROVIDER": "mem0",
    "CHORUS_MEMORY__PROVIDERS__MEM0__LLM_MODEL": "fake-llm",
    "CHORUS_MEMORY__PROVIDERS__MEM0__EMBEDDING_MODEL": "fake-embedding",
    "CHORUS_MEMORY__PROVIDERS__MEM0__EMBEDDING_DIMS": "64",
    "CHORUS_MEMORY__PREFETCH_TIMEOUT": "10",  # recall is asserted, not raced
}


@pytest.fixture
async def mem0_stack(
    chorus_home: Path, server: FakeOpenAI, redis_server: RedisServer
) -> AsyncIterator[Stack]:
    chorus_home.mkdir(mode=0o700)
    secrets = chorus_home / ".env"  # the provider's secret and endpoint, as an operator sets them
    secrets.write_text(f"OPENAI_API_KEY=sk-test\nOPENAI_BASE_URL={server.base_url}\n")
    secrets.chmod(0o600)
    server.responder(mem0_responder)  # the agent's own turns get "ok"
    settings = stack_settings(
        chorus_home,
        server,
        CHORUS_REDIS__URL=redis_server.url,
        CHORUS_REDIS__RETRY_INTERVALS="[0]",
        **MEM0,
    )
    built = await build_stack(settings)
    yield built
    await close_stack(built)


@pytest.fixture
def mem0_workers(
    chorus_home: Path, server: FakeOpenAI, redis_server: RedisServer
) -> Iterator[ChorusWorkers]:
    env = {**env_for(chorus_home, server, redis_server, "mem0"), **MEM0}
    pool = ChorusWorkers(chorus_home, env)
    yield pool
    pool.stop_all()


async def agent_for(stack: Stack, session_id: str, user_key: str, chat: str) -> Agent:
    agent = stack.factory.agent_for(
        SessionContext(session_id, UserKey.parse(user_key), ChatRef("slack", chat), is_direct=False)
    )
    await agent.start()
    return agent


def recalled(server: FakeOpenAI) -> str:
    """The recalled memory the agent's last request carried (mem0's own calls skipped)."""
    for body in reversed(server.requests):
        body_: dict[str, Any] = body
        if any(t["function"]["name"] == "mem0_search" for t in body_.get("tools") or []):
            user = [m for m in body_["messages"] if m["role"] == "user"][-1]["content"]
            return str(user).partition("<memory-context>")[2]
    raise AssertionError("no agent request seen")


async def ask(agent: Agent, server: FakeOpenAI, question: str, speaker: str) -> str:
    await agent.run_turn(question, speaker=speaker)
    return recalled(server)


async def test_scope_user_recall_is_each_persons_own(
    mem0_stack: Stack, server: FakeOpenAI, mem0_workers: ChorusWorkers
) -> None:
    mem0_workers.start()
    ann = await agent_for(mem0_stack, "ann", "slack:U1", "C1")
    bob = await agent_for(mem0_stack, "bob", "slack:U2", "C1")
    await ann.run_turn(
        "I love sushi and olives. I moved to Lisbon last spring.", speaker="slack:U1"
    )
    await bob.run_turn(
        "I hate sushi and olives. I live in Berlin near the river.", speaker="slack:U2"
    )
    await wait_idle(mem0_stack, timeout=120)

    mine = await ask(ann, server, PROBE, "slack:U1")
    assert "Lisbon" in mine and "love sushi" in mine
    assert "Berlin" not in mine and "hate" not in mine
    his = await ask(bob, server, PROBE, "slack:U2")
    assert "Berlin" in his and "hate sushi" in his
    assert "Lisbon" not in his and "love" not in his


async def test_scope_chat_the_shared_session_never_recalls_a_members_own_memory(
    mem0_stack: Stack, server: FakeOpenAI, mem0_workers: ChorusWorkers
) -> None:
    mem0_workers.start()
    room = await agent_for(mem0_stack, "room", "slack#chat:C2", "C2")
    await room.run_turn(
        "I love sushi and olives. I moved to Lisbon last spring.", speaker="slack:U1"
    )
    await wait_idle(mem0_stack, timeout=120)

    server.tool_call("mem0_search", {"query": PROBE})  # the model searches, in the room
    await room.run_turn("search your memory: " + PROBE, speaker="slack:U1")
    tool_result = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"][-1]
    assert '"success": false' not in tool_result["content"]
    assert "Lisbon" not in tool_result["content"]  # the room's own memory, not hers
    assert "Lisbon" not in await ask(room, server, PROBE, "slack:U1")
    assert "Lisbon" not in await ask(room, server, PROBE, "slack:U2")
    await wait_idle(mem0_stack, timeout=120)  # the room's syncs write her store: a recall
    # waits only PREFETCH_WAIT for it and comes back empty while one runs
    ann = await agent_for(mem0_stack, "ann", "slack:U1", "C2")  # her own session
    assert "Lisbon" in await ask(ann, server, PROBE, "slack:U1")

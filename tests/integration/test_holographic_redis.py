"""``memory.provider: holographic`` on the gateway's stack with `chorus worker` processes.

Two people in one Slack channel, with ``sessions.scope: user`` (a session each)
and ``chat`` (one shared session, the speaker named per turn): what one of them
told the bot in their own session — through the ``fact_store`` tool, or said in a
turn the worker syncs — goes to their own store, is recalled in their own session
and never for the other. What a member says in the shared session is synced to
their own store too, but the shared session recalls and searches (``fact_store``)
only the chat's own store, and a ``fact_store`` write there lands in it.
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
from tests.integration.conftest import Stack, build_stack, close_stack, stack_settings
from tests.integration.test_providers_redis import ChorusWorkers, env_for, wait_idle

pytest_plugins = ["tests.fakes.redis_fixtures"]


@pytest.fixture
async def holo_stack(
    chorus_home: Path, server: FakeOpenAI, redis_server: RedisServer
) -> AsyncIterator[Stack]:
    chorus_home.mkdir(mode=0o700)
    settings = stack_settings(
        chorus_home,
        server,
        CHORUS_MEMORY__PROVIDER="holographic",
        CHORUS_REDIS__URL=redis_server.url,
        CHORUS_REDIS__RETRY_INTERVALS="[0]",
    )
    built = await build_stack(settings)
    yield built
    await close_stack(built)


@pytest.fixture
def holo_workers(
    chorus_home: Path, server: FakeOpenAI, redis_server: RedisServer
) -> Iterator[ChorusWorkers]:
    pool = ChorusWorkers(chorus_home, env_for(chorus_home, server, redis_server, "holographic"))
    yield pool
    pool.stop_all()


async def agent_for(stack: Stack, session_id: str, user_key: str, chat: str) -> Agent:
    agent = stack.factory.agent_for(
        SessionContext(session_id, UserKey.parse(user_key), ChatRef("slack", chat), is_direct=False)
    )
    await agent.start()
    return agent


def recalled(server: FakeOpenAI) -> str:
    """What the last request's user message carried as recalled memory."""
    body: dict[str, Any] = server.requests[-1]
    user = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    text = user if isinstance(user, str) else str(user)
    return text.partition("<memory-context>")[2]


async def remember_by_tool(agent: Agent, server: FakeOpenAI, fact: str, speaker: str) -> None:
    server.tool_call("fact_store", {"action": "add", "content": fact})
    server.reply("noted")
    await agent.run_turn(f"please remember: {fact}", speaker=speaker)


async def ask(agent: Agent, server: FakeOpenAI, question: str, speaker: str) -> str:
    server.reply("let me think")
    await agent.run_turn(question, speaker=speaker)
    return recalled(server)


async def search(agent: Agent, server: FakeOpenAI, query: str, speaker: str) -> str:
    """What a ``fact_store`` search the model makes in ``agent``'s session answers."""
    server.tool_call("fact_store", {"action": "search", "query": query})
    server.reply("found")
    await agent.run_turn(f"search the facts for {query}", speaker=speaker)
    return str([m for m in server.requests[-1]["messages"] if m["role"] == "tool"][-1]["content"])


async def test_scope_user_two_people_in_one_channel_never_share_recall(
    holo_stack: Stack, server: FakeOpenAI, holo_workers: ChorusWorkers
) -> None:
    holo_workers.start()
    ann = await agent_for(holo_stack, "ann", "slack:U1", "C1")
    bob = await agent_for(holo_stack, "bob", "slack:U2", "C1")
    await remember_by_tool(ann, server, "The storage locker code is 4411", "slack:U1")
    server.reply("lovely")
    await ann.run_turn("I prefer oolong tea in the afternoon", speaker="slack:U1")  # synced
    await wait_idle(holo_stack)

    assert "4411" in await ask(ann, server, "what is the locker code?", "slack:U1")
    assert "oolong" in await ask(ann, server, "which tea do I prefer?", "slack:U1")
    for question in ("what is the locker code?", "which tea do I prefer?"):
        leak = await ask(bob, server, question, "slack:U2")
        assert "4411" not in leak and "oolong" not in leak
    server.tool_call("fact_store", {"action": "search", "query": "locker code"})
    server.reply("nothing")
    await bob.run_turn("search the facts for the locker code", speaker="slack:U2")
    tool_result = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"][-1]
    assert "4411" not in tool_result["content"]


async def test_scope_chat_the_shared_session_never_recalls_a_members_own_store(
    holo_stack: Stack, server: FakeOpenAI, holo_workers: ChorusWorkers
) -> None:
    holo_workers.start()
    ann = await agent_for(holo_stack, "ann", "slack:U1", "C2")  # her own session
    await remember_by_tool(ann, server, "Ann's parking spot is P12", "slack:U1")
    room = await agent_for(holo_stack, "room", "slack#chat:C2", "C2")
    server.reply("sounds good")
    await room.run_turn("I prefer window seats on trains", speaker="slack:U1")  # synced: hers
    await remember_by_tool(room, server, "The team meets at the harbour", "slack:U1")
    await wait_idle(holo_stack)

    for speaker in ("slack:U1", "slack:U2"):  # what every member's request would carry
        for question in ("where is my parking spot?", "which seats do I prefer?"):
            leak = await ask(room, server, question, speaker)
            assert "P12" not in leak and "window" not in leak
        for query in ("parking spot", "window seats"):
            leak = await search(room, server, query, speaker)
            assert "P12" not in leak and "window" not in leak
        assert "harbour" in await search(room, server, "team meets", speaker)  # the room's own
    assert "harbour" in await ask(room, server, "where does the team meet?", "slack:U2")
    assert "P12" in await ask(ann, server, "where is my parking spot?", "slack:U1")
    assert "window" in await ask(ann, server, "which seats do I prefer?", "slack:U1")
    assert "harbour" not in await search(ann, server, "team meets", "slack:U1")

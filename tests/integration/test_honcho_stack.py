"""``memory.provider: honcho`` on the whole in-process stack: agents, jobs, the real SDK.

The operator's setup is the one the README gives (the key in ``CHORUS_HOME/.env``,
the rest under ``memory.providers.honcho``); the Honcho behind it is FakeHoncho.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.fakes import FakeOpenAI
from tests.fakes.honcho_server import FakeHoncho
from tests.integration.conftest import Stack, build_stack, close_stack, stack_settings

ALICE_PEER = "telegram_3a1"


@pytest.fixture
def honcho() -> Iterator[FakeHoncho]:
    with FakeHoncho() as server:
        yield server


async def honcho_stack(
    chorus_home: Path, server: FakeOpenAI, honcho: FakeHoncho, mode: str, **extra: str
) -> Stack:
    chorus_home.mkdir(mode=0o700)
    secrets = chorus_home / ".env"
    secrets.write_text(f"HONCHO_API_KEY={honcho.api_key}\n")
    secrets.chmod(0o600)
    settings = stack_settings(
        chorus_home,
        server,
        CHORUS_MEMORY__PROVIDER="honcho",
        CHORUS_MEMORY__PROVIDERS__HONCHO__BASE_URL=honcho.base_url,
        CHORUS_MEMORY__PROVIDERS__HONCHO__RECALL_MODE=mode,
        CHORUS_MEMORY__PREFETCH_TIMEOUT="10",  # recall is asserted, not raced
        **extra,
    )
    return await build_stack(settings)


@pytest.fixture
async def stack(chorus_home: Path, server: FakeOpenAI, honcho: FakeHoncho) -> AsyncIterator[Stack]:
    built = await honcho_stack(chorus_home, server, honcho, "hybrid")
    yield built
    await close_stack(built)


def last_user_text(server: FakeOpenAI) -> str:
    return str([m for m in server.requests[-1]["messages"] if m["role"] == "user"][-1]["content"])


async def test_turns_reach_honcho_and_come_back_as_recall_and_tools(
    stack: Stack, server: FakeOpenAI, honcho: FakeHoncho
) -> None:
    agent = await stack.agent("s1")
    assert "honcho_reasoning" in agent.system_prompt
    server.reply("Noted!")
    await agent.run_turn("My sister Anna lives in Lisbon.")
    assert stack.background.queue.flush(10)
    assert honcho.messages_of("s1") == [
        (ALICE_PEER, "My sister Anna lives in Lisbon."),
        ("chorus-assistant", "Noted!"),
    ]
    offered = [t["function"]["name"] for t in server.requests[0]["tools"]]
    assert {"honcho_profile", "honcho_search", "honcho_conclude"} <= set(offered)

    server.tool_call("honcho_search", {"query": "where does my sister live"})
    server.reply("She lives in Lisbon.")
    assert await agent.run_turn("Where does my sister Anna live?") == "She lives in Lisbon."
    recalled = [m for m in server.requests[-2]["messages"] if m["role"] == "user"][-1]
    assert "<memory-context>" in recalled["content"]
    assert "My sister Anna lives in Lisbon." in recalled["content"]
    tool_result = next(m for m in server.requests[-1]["messages"] if m["role"] == "tool")
    found = json.loads(tool_result["content"])
    assert found["results"][0]["conclusion"] == "My sister Anna lives in Lisbon."
    assert stack.background.queue.flush(10)
    stored = [text for _, text in honcho.messages_of("s1")]
    assert all("memory-context" not in text for text in stored)  # recall is never stored back

    server.tool_call("memory", {"action": "add", "target": "user", "content": "Has a sister"})
    server.reply("Saved.")
    await agent.run_turn("Remember that I have a sister.")
    assert "Has a sister" in honcho.conclusions_of(ALICE_PEER)


async def test_context_mode_injects_and_offers_no_honcho_tools(
    chorus_home: Path, server: FakeOpenAI, honcho: FakeHoncho
) -> None:
    stack = await honcho_stack(chorus_home, server, honcho, "context")
    try:
        agent = await stack.agent("s1")
        server.reply("Noted!")
        await agent.run_turn("I love dark roast coffee.")
        assert stack.background.queue.flush(10)
        server.reply("Dark roast.")
        await agent.run_turn("What coffee do I love?")
        assert "I love dark roast coffee." in last_user_text(server)
        offered = [t["function"]["name"] for t in server.requests[-1]["tools"]]
        assert not [name for name in offered if name.startswith("honcho_")]
    finally:
        await close_stack(stack)


async def test_cadences_space_out_the_calls_each_turn_makes(
    chorus_home: Path, server: FakeOpenAI, honcho: FakeHoncho
) -> None:
    chorus_home.mkdir(mode=0o700)
    secrets = chorus_home / ".env"
    secrets.write_text(f"HONCHO_API_KEY={honcho.api_key}\n")
    secrets.chmod(0o600)
    settings = stack_settings(
        chorus_home,
        server,
        CHORUS_MEMORY__PROVIDER="honcho",
        CHORUS_MEMORY__PROVIDERS__HONCHO__BASE_URL=honcho.base_url,
        CHORUS_MEMORY__PROVIDERS__HONCHO__CONTEXT_CADENCE="2",
        CHORUS_MEMORY__PROVIDERS__HONCHO__DIALECTIC_CADENCE="3",
        CHORUS_MEMORY__PREFETCH_TIMEOUT="10",
    )
    stack = await build_stack(settings)
    context = ("GET", f"/v3/workspaces/chorus/peers/{ALICE_PEER}/context")
    chat = ("POST", f"/v3/workspaces/chorus/peers/{ALICE_PEER}/chat")
    try:
        agent = await stack.agent("s1")
        seen = []
        for text in ["I keep bees.", "They make honey.", "What do I keep?", "And what else?"]:
            assert stack.background.queue.flush(10)
            honcho.requests.clear()
            server.reply("Ok.")
            await agent.run_turn(text)
            assert stack.background.queue.flush(10)
            calls = [(method, path) for method, path, _ in honcho.requests]
            seen.append((calls.count(context), calls.count(chat)))
        # context: the turn's recall on turns 1 and 3, the warm-up after them;
        # dialectic: turns 1 and 4
        assert seen == [(2, 1), (0, 0), (2, 0), (0, 1)]
        assert "I keep bees." in last_user_text(server)  # turn 4 injects turn 3's context
    finally:
        await close_stack(stack)


async def test_the_end_of_session_flush_writes_no_conclusion(
    chorus_home: Path, server: FakeOpenAI, honcho: FakeHoncho
) -> None:
    stack = await honcho_stack(
        chorus_home, server, honcho, "hybrid", CHORUS_MEMORY__FLUSH_MIN_TURNS="1"
    )
    try:
        agent = await stack.agent("ending")
        server.reply("Nice.")
        await agent.run_turn("I play the cello.")
        assert stack.background.queue.flush(10)
        server.tool_call(
            "memory", {"action": "add", "target": "user", "content": "Plays the cello"}
        )
        server.reply("Saved.")
        stack.background.scheduler.end_session("ending", "idle")
        assert stack.background.queue.flush(10)
        flushes = [
            r
            for r in server.requests
            if [t["function"]["name"] for t in r.get("tools", [])] == ["memory"]
        ]
        assert flushes, "no flush ran"
        profiles = list((chorus_home / "memories").rglob("USER.md"))
        assert any("Plays the cello" in p.read_text() for p in profiles)  # the flush wrote it
        assert "Plays the cello" not in honcho.conclusions_of(ALICE_PEER)
        assert not [path for _, path, _ in honcho.requests if path.endswith("/conclusions")]
    finally:
        await close_stack(stack)

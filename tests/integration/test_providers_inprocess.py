"""Memory providers wired through the agent and the in-process background queue."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.fakes import FakeOpenAI
from tests.integration.conftest import Stack
from tests.integration.recorder_plugin import read_log, set_behaviour, wait_for


def hooks(home: Path, name: str, context: str | None = None) -> list[dict[str, Any]]:
    return [
        e
        for e in read_log(home)
        if e["hook"] == name and (context is None or e["context"] == context)
    ]


def user_text(request: dict[str, Any]) -> str:
    return [m for m in request["messages"] if m["role"] == "user"][-1]["content"]


async def test_provider_gets_every_hook_in_order(stack: Stack, server: FakeOpenAI) -> None:
    home = stack.settings.home
    agent = await stack.agent("s1")
    assert "RECORDER PROVIDER BLOCK" in agent.system_prompt

    primary = hooks(home, "initialize", "primary")
    given = dict(primary[0]["kwargs"])
    assert given.pop("embedder").startswith("<agent.llm.LLMEmbeddings")  # the chat endpoint's
    assert given == {
        "account_keys": "[]",  # a person's linked accounts; this account is linked to none
        "agent_context": "primary",
        "chat_id": "chat-telegram:1",
        "chorus_home": str(home),
        "config": "{}",
        "is_direct": "None",
        "parent_session_id": "None",
        "platform": "telegram",
        "thread_id": "None",
        "user_key": "telegram:1",
    }

    server.tool_call("recall_notes", {"topic": "tea"})
    server.reply("answer 1")
    assert await agent.run_turn("what about tea?") == "answer 1"
    offered = [t["function"]["name"] for t in server.requests[0]["tools"]]
    assert offered.count("memory") == 1 and "recall_notes" in offered
    tool_result = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")
    assert json.loads(tool_result["content"]) == {"notes": "notes about tea"}
    assert stack.background.queue.flush(10)

    server.tool_call("memory", {"action": "add", "target": "user", "content": "Likes oolong"})
    server.reply("answer 2")
    assert await agent.run_turn("I like oolong") == "answer 2"
    turn2 = server.requests[2]
    assert "<memory-context>" in user_text(turn2)
    assert "RECALLED about I like oolong" in user_text(turn2)  # recall for this very message
    assert "RECALLED" not in turn2["messages"][0]["content"]  # never in the system prompt
    assert stack.background.queue.flush(10)

    server.reply("answer 3")
    await agent.run_turn("thanks")
    assert stack.background.queue.flush(10)

    writes = hooks(home, "on_memory_write")
    assert [(w["action"], w["target"], w["content"]) for w in writes] == [
        ("add", "user", "Likes oolong")
    ]
    assert [h["turn"] for h in hooks(home, "on_turn_start")] == [1, 2, 3]
    synced = hooks(home, "sync_turn")
    assert [(s["user"], s["assistant"]) for s in synced] == [
        ("what about tea?", "answer 1"),
        ("I like oolong", "answer 2"),
        ("thanks", "answer 3"),
    ]
    assert all(s["context"] == "background" for s in synced)
    assert all("memory-context" not in s["user"] for s in synced)
    background_init = hooks(home, "initialize", "background")[0]["kwargs"]
    assert background_init["user_key"] == "telegram:1"


async def test_end_session_twice_flushes_and_ends_once(stack: Stack, server: FakeOpenAI) -> None:
    home = stack.settings.home
    agent = await stack.agent("ending")
    server.reply("noted")
    await agent.run_turn("I play the cello")
    assert stack.background.queue.flush(10)
    server.tool_call("memory", {"action": "add", "target": "user", "content": "Plays cello"})

    stack.background.scheduler.end_session("ending", "idle")
    stack.background.scheduler.end_session("ending", "idle")
    assert stack.background.queue.flush(10)

    flushes = [
        r
        for r in server.requests
        if [t["function"]["name"] for t in r.get("tools", [])] == ["memory"]
    ]
    assert len(flushes) == 1
    assert len(hooks(home, "on_session_end")) == 1
    assert hooks(home, "on_memory_write", "flush")[0]["content"] == "Plays cello"
    record = await stack.db.get_session("ending")
    assert record is not None and record.end_reason == "idle"


async def test_slow_provider_sync_does_not_delay_the_reply(
    stack: Stack, server: FakeOpenAI, tmp_path: Path
) -> None:
    home = stack.settings.home
    gate = tmp_path / "release-sync"
    set_behaviour(home, block_sync_until=str(gate))
    agent = await stack.agent("slow")
    server.reply("instant answer")
    assert await agent.run_turn("hello") == "instant answer"
    # the reply is back while the provider's sync is still running in the background
    await asyncio.to_thread(wait_for, lambda: hooks(home, "sync_start"), 30, "sync start")
    assert hooks(home, "sync_turn") == []
    server.reply("second answer")
    assert await agent.run_turn("still there?") == "second answer"
    assert hooks(home, "sync_turn") == []
    gate.touch()
    assert stack.background.queue.flush(30)
    assert [s["user"] for s in hooks(home, "sync_turn")] == ["hello", "still there?"]


async def test_provider_failing_everywhere_never_breaks_a_turn(
    stack: Stack, server: FakeOpenAI
) -> None:
    home = stack.settings.home
    set_behaviour(home, raise_everywhere=True)
    agent = await stack.agent("angry")
    server.tool_call("recall_notes", {"topic": "x"})
    server.tool_call("memory", {"action": "add", "target": "user", "content": "Has a dog"})
    server.reply("still fine")
    assert await agent.run_turn("go") == "still fine"
    server.reply("fine again")
    assert await agent.run_turn("again") == "fine again"
    stack.background.scheduler.end_session("angry", "new")
    assert stack.background.queue.flush(10)
    assert agent.store.user_entries == ["Has a dog"]
    status = stack.background.queue.status()
    assert status.failed == 0
    record = await stack.db.get_session("angry")
    assert record is not None and record.end_reason == "new"


async def test_provider_settings_reach_initialize_and_health_is_recorded(
    chorus_home: Path, server: FakeOpenAI
) -> None:
    from memory.providers import ProviderHealth
    from tests.integration.conftest import build_stack, close_stack, stack_settings
    from tests.integration.recorder_plugin import install_recorder

    chorus_home.mkdir(mode=0o700)
    install_recorder(chorus_home)
    (chorus_home / "config.yaml").write_text(
        "memory:\n  providers:\n    recorder:\n      colour: blue\n", encoding="utf-8"
    )
    settings = stack_settings(chorus_home, server, CHORUS_MEMORY__PROVIDERS__RECORDER__SIZE="9")
    stack = await build_stack(settings)
    try:
        agent = await stack.agent("s1")
        [init] = hooks(chorus_home, "initialize", "primary")
        assert init["kwargs"]["config"] == str({"colour": "blue", "size": "9"})
        set_behaviour(chorus_home, raise_everywhere=True)
        server.reply("fine anyway")
        assert await agent.run_turn("hello") == "fine anyway"
        assert stack.background.queue.flush(10)
        with ProviderHealth(stack.settings.home / "state.db") as health:
            events = health.events("recorder")
        assert events["started"].detail in ("primary", "background")
        assert events["failed"].detail == "RuntimeError"
    finally:
        await close_stack(stack)


async def test_ending_many_sessions_reuses_one_llm_connection(
    stack: Stack, server: FakeOpenAI
) -> None:
    for n in range(3):
        agent = await stack.agent(f"end-{n}", user_key=f"telegram:{n + 1}")
        server.reply(f"answer {n}")
        await agent.run_turn(f"question {n}")
    assert stack.background.queue.flush(10)
    before = len(server.connections)
    for n in range(3):
        stack.background.scheduler.end_session(f"end-{n}", "idle")
    assert stack.background.queue.flush(20)
    ending = server.connections[before:]
    assert len(ending) >= 6  # a flush and a handoff summary for each session
    assert len(set(ending)) == 1  # one client on one kept loop, not one per job
    for n in range(3):
        record = await stack.db.get_session(f"end-{n}")
        assert record is not None and record.end_reason == "idle" and record.summary

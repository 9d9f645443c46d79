"""What a provider holds after /undo, /retry, /new and compression, and when it recalls.

The whole stack in one process (agents, the in-process job queue, the recorder
provider plugin); the provider's log is the evidence.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agent.agent import Agent
from agent.context import SessionContext
from agent.history import kept_turns, replay
from memory.paths import ChatRef, UserKey
from tests.fakes import FakeOpenAI
from tests.integration.conftest import Stack, build_stack, close_stack, stack_settings
from tests.integration.recorder_plugin import install_recorder, read_log, set_behaviour


def hooks(home: Path, name: str, context: str | None = None) -> list[dict[str, Any]]:
    return [
        e
        for e in read_log(home)
        if e["hook"] == name and (context is None or e["context"] == context)
    ]


def held_turns(home: Path) -> list[str]:
    """The user messages the provider holds: synced ones minus the ones withdrawn."""
    held: list[str] = []
    for entry in read_log(home):
        if entry["hook"] == "sync_turn":
            held.append(entry["user"])
        elif entry["hook"] == "on_session_switch" and entry["withdrawn"]:
            held.remove(entry["withdrawn"]["user_content"])
    return held


async def transcript_turns(stack: Stack, session_id: str) -> list[str]:
    stored = [m.to_openai() for m in await stack.db.get_messages(session_id)]
    return [m["content"] for m in replay(stored) if m["role"] == "user"]


async def answer(agent: Agent, server: FakeOpenAI, text: str) -> str:
    server.reply(f"answer to {text}")
    return await agent.run_turn(text)


async def test_after_undo_the_provider_holds_exactly_the_transcripts_turns(
    stack: Stack, server: FakeOpenAI
) -> None:
    home = stack.settings.home
    agent = await stack.agent("s1")
    await answer(agent, server, "one")
    await answer(agent, server, "two")
    assert stack.background.queue.flush(10)
    assert await agent.undo_last_turn() == "two"  # synced already: withdrawn
    await answer(agent, server, "three")
    await answer(agent, server, "four")
    assert await agent.undo_last_turn() == "four"  # maybe not synced yet: either way
    await answer(agent, server, "five")
    assert stack.background.queue.flush(10)

    assert held_turns(home) == ["one", "three", "five"]
    assert held_turns(home) == await transcript_turns(stack, "s1")
    synced = [e["user"] for e in hooks(home, "sync_turn")]
    assert len(synced) == len(set(synced))  # nothing synced twice
    rewinds = [e for e in hooks(home, "on_session_switch") if e["rewound"]]
    assert {(e["context"], e["reason"]) for e in rewinds} == {
        ("primary", "undo"),
        ("background", "undo"),
    }
    assert all(e["new"] == e["parent"] == "s1" for e in rewinds)
    withdrawn = [e["withdrawn"] for e in rewinds if e["withdrawn"]]
    assert withdrawn[0] == {"turn": 2, "user_content": "two", "assistant_content": "answer to two"}


async def test_retry_withdraws_the_turn_and_syncs_its_new_answer_once(
    stack: Stack, server: FakeOpenAI
) -> None:
    home = stack.settings.home
    agent = await stack.agent("s1")
    await answer(agent, server, "what is 2+2?")
    assert stack.background.queue.flush(10)
    assert await agent.undo_last_turn(reason="retry") == "what is 2+2?"
    server.reply("4, surely")
    await agent.run_turn("what is 2+2?")
    assert stack.background.queue.flush(10)

    synced = [(e["user"], e["assistant"]) for e in hooks(home, "sync_turn")]
    assert synced == [("what is 2+2?", "answer to what is 2+2?"), ("what is 2+2?", "4, surely")]
    assert held_turns(home) == ["what is 2+2?"]
    reasons = {e["reason"] for e in hooks(home, "on_session_switch")}
    assert reasons == {"retry"}


async def test_a_rebuilt_agent_numbers_turns_after_an_undo_like_the_first(
    stack: Stack, server: FakeOpenAI
) -> None:
    """An agent rebuilt from SessionDB (eviction, restart) gives the next turn a new position."""
    home = stack.settings.home
    agent = await stack.agent("s1")
    await answer(agent, server, "one")
    await answer(agent, server, "two")
    await agent.undo_last_turn()
    await agent.close()
    rebuilt = await stack.agent("s1")
    await answer(rebuilt, server, "three")
    assert stack.background.queue.flush(10)
    assert held_turns(home) == ["one", "three"]
    stored = [m.to_openai() for m in await stack.db.get_messages("s1")]
    assert kept_turns(stored) == [1, 3]


async def test_a_session_after_new_starts_with_a_reset_naming_its_parent(
    stack: Stack, server: FakeOpenAI
) -> None:
    home = stack.settings.home
    first = await stack.agent("s1")
    await answer(first, server, "hello")
    await stack.db.request_end("s1", "new")
    stack.background.scheduler.end_session("s1", "new")
    assert stack.background.queue.flush(10)
    second = stack.factory.agent_for(
        SessionContext(
            "s2",
            UserKey.parse("telegram:1"),
            ChatRef("telegram", "chat-telegram:1"),
            parent_session_id="s1",
            started_because="new",
        )
    )
    await second.start()
    [switch] = hooks(home, "on_session_switch")
    assert (switch["context"], switch["new"], switch["parent"]) == ("primary", "s2", "s1")
    assert (switch["reset"], switch["rewound"], switch["reason"]) == (True, False, "new")
    assert [e["session"] for e in hooks(home, "on_session_end")] == ["s1"]
    await second.close()  # a restart rebuilds it: no second reset for the same session
    again = await stack.agent("s2")
    await answer(again, server, "still s2")
    assert len(hooks(home, "on_session_switch")) == 1


async def test_speaker_reaches_the_provider_on_every_per_turn_call_but_recall_and_tools(
    stack: Stack, server: FakeOpenAI
) -> None:
    home = stack.settings.home
    agent = await stack.agent("g1", "slack#chat:C1")
    server.reply("hi Ann")
    await agent.run_turn("hi, I am Ann", speaker="slack:U1")
    server.tool_call("recall_notes", {"topic": "Bob"})
    server.reply("hi Bob")
    await agent.run_turn("and I am Bob", speaker="slack:U2")
    assert stack.background.queue.flush(10)
    assert [e["speaker"] for e in hooks(home, "on_turn_start")] == ["slack:U1", "slack:U2"]
    assert [e["speaker"] for e in hooks(home, "tool")] == [None]  # the chat's own memory
    assert [e["speaker"] for e in hooks(home, "prefetch")] == [None, None]  # the chat's own
    synced = [(e["user"], e["speaker"]) for e in hooks(home, "sync_turn")]
    assert synced == [("hi, I am Ann", "slack:U1"), ("and I am Bob", "slack:U2")]
    assert [e["speaker"] for e in hooks(home, "queue_prefetch")] == [None, None]

    assert await agent.undo_last_turn() == "and I am Bob"
    assert stack.background.queue.flush(10)
    withdrawn = [e["withdrawn"] for e in hooks(home, "on_session_switch") if e["withdrawn"]]
    assert withdrawn == [  # says whose memory the withdrawn turn went to
        {
            "turn": 2,
            "user_content": "and I am Bob",
            "assistant_content": "hi Bob",
            "speaker": "slack:U2",
        }
    ]


async def test_a_persons_own_session_names_the_speaker_to_a_provider_tool(
    stack: Stack, server: FakeOpenAI
) -> None:
    agent = await stack.agent("d1", "slack:U1")
    server.tool_call("recall_notes", {"topic": "tea"})
    server.reply("Oolong.")
    await agent.run_turn("which tea do I like?", speaker="slack:U1")
    assert [e["speaker"] for e in hooks(stack.settings.home, "tool")] == ["slack:U1"]


async def test_recall_is_for_this_message_and_a_slow_provider_costs_at_most_the_timeout(
    chorus_home: Path, server: FakeOpenAI
) -> None:
    chorus_home.mkdir(mode=0o700)
    install_recorder(chorus_home, prefetch_text="RECALLED about {query}", prefetch_delay=1.5)
    settings = stack_settings(chorus_home, server, CHORUS_MEMORY__PREFETCH_TIMEOUT="0.1")
    stack = await build_stack(settings)
    try:
        agent = await stack.agent("s1")
        await answer(agent, server, "slow one")
        first = [m for m in server.requests[0]["messages"] if m["role"] == "user"][-1]
        assert "RECALLED" not in first["content"]  # the turn did not wait for it
        set_behaviour(chorus_home, prefetch_text="RECALLED about {query}")  # fast again
        assert agent.providers is not None and agent.providers.recall.pending
        for _ in range(200):  # the late answer arrives ~1.5 s after it was asked
            if not agent.providers.recall.pending:
                break
            await asyncio.sleep(0.05)
        await answer(agent, server, "fast two")
        second = [m for m in server.requests[1]["messages"] if m["role"] == "user"][-1]
        assert "RECALLED about slow one" in second["content"]  # carried over
        assert "RECALLED about fast two" in second["content"]  # and this turn's own
        assert "RECALLED" not in server.requests[1]["messages"][0]["content"]
    finally:
        await close_stack(stack)

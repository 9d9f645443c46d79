"""Compression and memory flush, driven through the agent against the fake endpoint."""

from __future__ import annotations

import copy
import json
from typing import Any

from agent.agent import NUDGE
from agent.compressor import SUMMARY_PREFIX
from agent.flush import FLUSH_PROMPT
from tests.agent.conftest import MakeAgent, system_of
from tests.fakes import FakeOpenAI, Reply


def kind(request: dict[str, Any]) -> str:
    tools = [t["function"]["name"] for t in request.get("tools", [])]
    if tools == ["memory"]:
        return "flush"
    if not tools and request["model"] == "aux":
        return "summary"
    return "turn"


class Script:
    """Answers each kind of request the way a cooperative model would."""

    def __init__(self) -> None:
        self.summaries = 0
        self.flushes = 0

    def __call__(self, body: dict[str, Any]) -> Reply | str:
        which = kind(body)
        if which == "flush":
            self.flushes += 1
            fact = f"Prefers metric units (flush {self.flushes})"
            return Reply.of_tool_calls(
                [("memory", {"action": "add", "target": "user", "content": fact})]
            )
        if which == "summary":
            self.summaries += 1
            return f"## Goal\nsummary v{self.summaries}"
        return "ok"


def has_flush_prompt(request: dict[str, Any]) -> bool:
    return FLUSH_PROMPT in json.dumps(request)


async def test_compression_flushes_first_keeps_head_and_tail_and_iterates(
    server: FakeOpenAI, make_agent: MakeAgent
) -> None:
    script = Script()
    server.responder(script)
    agent = await make_agent(
        llm={"context_length": 3000, "auxiliary_model": "aux"},
        compression={"threshold": 0.5, "tail_token_budget": 400},
        memory={"nudge_interval": 0},
    )
    threshold = agent.compressor.threshold_tokens
    assert threshold == 1500

    turn = 0
    while agent.compressor.compressions == 0:
        turn += 1
        assert turn < 30, "compression never fired"
        before = copy.deepcopy(agent.history)
        await agent.run_turn(f"turn {turn}: " + "lorem ipsum dolor " * 40)

    kinds = [kind(r) for r in server.requests]
    first_flush = kinds.index("flush")
    assert kinds[first_flush : first_flush + 3] == ["flush", "summary", "turn"]
    assert server.requests[first_flush]["model"] == "aux"

    # head kept verbatim, one summary message, the newest messages kept
    assert agent.history[:3] == before[:3]
    summaries = [m for m in agent.history if str(m.get("content", "")).startswith(SUMMARY_PREFIX)]
    assert len(summaries) == 1 and "summary v1" in summaries[0]["content"]
    assert agent.history[-2]["content"].startswith(f"turn {turn}:")
    assert len(agent.history) < len(before) + 2

    # the flush left no trace, and its memory write reached the rebuilt system prompt
    after = server.requests[first_flush + 2]
    assert not has_flush_prompt(after)
    assert "Prefers metric units (flush 1)" in system_of(after)
    assert "Prefers metric units" not in system_of(server.requests[0])
    assert all(not has_flush_prompt(r) for r in server.requests if kind(r) == "turn")

    # a second compression updates the first summary
    while agent.compressor.compressions == 1:
        turn += 1
        assert turn < 60, "second compression never fired"
        await agent.run_turn(f"turn {turn}: " + "consectetur adipiscing " * 40)
    second_summary = [r for r in server.requests if kind(r) == "summary"][-1]
    prompt = json.dumps(second_summary)
    assert "PREVIOUS SUMMARY" in prompt and "summary v1" in prompt
    summaries = [m for m in agent.history if str(m.get("content", "")).startswith(SUMMARY_PREFIX)]
    assert len(summaries) == 1 and "summary v2" in summaries[0]["content"]


async def test_undo_gives_back_the_written_text_across_a_compression(
    server: FakeOpenAI, make_agent: MakeAgent
) -> None:
    """The requests add a memory nudge to their turn's message; the history keeps what was
    written, and /undo gives it back, for the turn after a compression and for the turn
    before it, kept in the tail."""
    server.responder(Script())
    agent = await make_agent(
        llm={"context_length": 3000, "auxiliary_model": "aux"},
        compression={"threshold": 0.5, "tail_token_budget": 400},
        memory={"nudge_interval": 1},
    )
    written: list[str] = []
    while agent.compressor.compressions == 0:
        assert len(written) < 30, "compression never fired"
        written.append(f"turn {len(written) + 1}: " + "lorem ipsum dolor " * 40)
        await agent.run_turn(written[-1])
    users = [m for m in agent.history if m["role"] == "user"]
    assert users[-2]["content"] == written[-2]  # kept in the tail, without its nudge
    turns = [r for r in server.requests if kind(r) == "turn"]
    assert turns[-1]["messages"][-1]["content"] == f"{written[-1]}\n\n{NUDGE}"
    chat_keys = {"role", "content", "tool_calls", "tool_call_id", "name"}
    assert all(set(m) <= chat_keys for m in agent.history)  # nothing of ours rides along

    assert await agent.undo_last_turn() == written[-1]
    assert await agent.undo_last_turn() == written[-2]


async def test_system_prompt_stable_until_compression(
    server: FakeOpenAI, make_agent: MakeAgent
) -> None:
    server.responder(Script())
    agent = await make_agent(
        llm={"context_length": 3000, "auxiliary_model": "aux"},
        compression={"tail_token_budget": 400},
    )
    for turn in range(3):
        await agent.run_turn(f"short {turn}")
    prompts = {json.dumps(system_of(r)) for r in server.requests if kind(r) == "turn"}
    assert len(prompts) == 1


async def test_flush_needs_enough_turns(server: FakeOpenAI, make_agent: MakeAgent) -> None:
    agent = await make_agent(llm={"auxiliary_model": "aux"})
    for turn in range(3):
        server.reply("ok")
        await agent.run_turn(f"m{turn}")
    sent = len(server.requests)
    assert await agent.flush(min_turns=6) == 0
    assert len(server.requests) == sent


async def test_flush_saves_and_leaves_no_trace(server: FakeOpenAI, make_agent: MakeAgent) -> None:
    agent = await make_agent(llm={"auxiliary_model": "aux"})
    for turn in range(2):
        server.reply("ok")
        await agent.run_turn(f"I work night shifts, message {turn}")
    before = copy.deepcopy(agent.history)
    server.tool_calls(
        [
            ("memory", {"action": "add", "target": "user", "content": "Works night shifts"}),
            ("memory", "not json"),
            ("session_search", {"query": "x"}),
        ]
    )
    assert await agent.flush(min_turns=0) == 1
    flush_request = server.last_request
    assert flush_request["model"] == "aux"
    assert [t["function"]["name"] for t in flush_request["tools"]] == ["memory"]
    assert flush_request["messages"][-1]["content"] == FLUSH_PROMPT
    assert agent.history == before
    assert agent.store.user_entries == ["Works night shifts"]

    server.reply("ok")
    await agent.run_turn("next")
    assert not has_flush_prompt(server.last_request)


async def test_flush_survives_endpoint_failure(server: FakeOpenAI, make_agent: MakeAgent) -> None:
    agent = await make_agent(llm={"max_retries": 0})
    server.reply("ok")
    await agent.run_turn("hello")
    before = copy.deepcopy(agent.history)
    server.error(500)
    assert await agent.flush(min_turns=0) == 0
    assert agent.history == before

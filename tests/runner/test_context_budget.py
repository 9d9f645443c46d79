"""A long turn stays within the context: compression is checked before every LLM call.

The gateway runs against the fake endpoint with an 8,000-token context; the
model calls tools step after step, each result about a thousand tokens.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.compressor import SUMMARY_PREFIX, estimate_tokens
from agent.flush import FLUSH_PROMPT
from memory.paths import ChorusPaths, UserKey
from tests.fakes import FakeOpenAI, Reply
from tests.runner.conftest import GatewayFactory

CONTEXT = 8_000
STEPS = 12
ENTRY = "Ada keeps notes about her garden: " + "tomatoes, basil and beans. " * 12


def kind(request: dict[str, Any]) -> str:
    tools = [t["function"]["name"] for t in request.get("tools", [])]
    if tools == ["memory"]:
        return "flush"
    if not tools and request["model"] == "aux":
        return "summary"
    return "turn"


def prompt_tokens(request: dict[str, Any]) -> int:
    """What the request costs: its messages and the tools it offers."""
    tools = json.dumps(request.get("tools", []), ensure_ascii=False)
    return estimate_tokens(request["messages"]) + len(tools) // 4


def fill_profile(home: Path, entries: int) -> None:
    """USER.md of testchat:2 with ``entries`` long entries (each tool result lists them all)."""
    home.mkdir(mode=0o700, exist_ok=True)
    path = ChorusPaths(home).user_file(UserKey("testchat", "2"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n§\n".join(f"{i}. {ENTRY}" for i in range(entries)), encoding="utf-8")


class ToolLoop:
    """A model that looks at the profile ``steps`` times in one turn, then answers."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.taken = 0
        self.summaries = 0

    def __call__(self, body: dict[str, Any]) -> Reply | str:
        which = kind(body)
        if which == "flush":
            return "nothing to save"
        if which == "summary":
            self.summaries += 1
            return f"## Goal\nLook through the garden notes (summary {self.summaries})"
        if self.taken < self.steps:
            self.taken += 1
            content = f"0. {ENTRY}"  # already there: the result lists every entry again
            return Reply.of_tool_calls(
                [("memory", {"action": "add", "target": "user", "content": content})],
                text=f"step {self.taken}",
            )
        return "done looking"


async def test_a_twelve_step_tool_loop_is_compressed_mid_turn(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    fill_profile(chorus_home, 12)
    loop = ToolLoop(STEPS)
    server.responder(loop)
    gw = await make_gateway(
        CHORUS_LLM__CONTEXT_LENGTH=str(CONTEXT),
        CHORUS_LLM__AUXILIARY_MODEL="aux",
        CHORUS_MEMORY__USER_CHAR_LIMIT="6000",
    )
    reply = await gw.ask("look through my garden notes twelve times", user="2")

    assert reply.text == "done looking"
    assert loop.taken == STEPS
    kinds = [kind(r) for r in server.requests]
    assert kinds.count("summary") >= 1
    first = kinds.index("summary")
    assert kinds[first - 1] == "flush" and "turn" in kinds[:first] and "turn" in kinds[first:]
    turns = [r for r in server.requests if kind(r) == "turn"]
    assert len(turns) == STEPS + 1  # one turn: every step asked, then the answer
    sizes = [prompt_tokens(r) for r in turns]
    assert max(sizes) < CONTEXT, sizes
    after = turns[-1]["messages"]
    assert any(str(m.get("content", "")).startswith(SUMMARY_PREFIX) for m in after)
    assert after[-1]["role"] == "tool"  # the tail of the turn's own work kept verbatim
    assert all(FLUSH_PROMPT not in json.dumps(r, ensure_ascii=False) for r in turns)


async def test_reported_prompt_tokens_over_the_threshold_compress_before_the_next_call(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    """The estimate stays under the threshold; the endpoint's own count does not."""
    gw = await make_gateway(
        CHORUS_LLM__CONTEXT_LENGTH=str(CONTEXT), CHORUS_LLM__AUXILIARY_MODEL="aux"
    )
    for n in range(5):
        server.reply(f"answer {n}")
        await gw.ask(f"question {n}: " + "about the garden " * 140, user="2")
    assert [kind(r) for r in server.requests] == ["turn"] * 5  # under the threshold

    server.push(
        Reply.of_tool_calls(
            [("session_search", {"query": "garden"})], usage={"prompt_tokens": 4_100}
        )
    )
    server.reply("nothing to save")
    server.reply("## Goal\nGarden questions")
    server.reply("found it")
    assert (await gw.ask("search the garden talk", user="2")).text == "found it"

    kinds = [kind(r) for r in server.requests[5:]]
    assert kinds == ["turn", "flush", "summary", "turn"]
    last = server.requests[-1]["messages"]
    assert any(str(m.get("content", "")).startswith(SUMMARY_PREFIX) for m in last)
    assert last[-1]["role"] == "tool" and last[-2]["tool_calls"][0]["function"]["name"] == (
        "session_search"
    )

"""``memory.memory_enabled``, ``memory.user_profile_enabled``: the prompt, the tool, the flush."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent.flush import FLUSH_PROMPT
from memory.paths import ChorusPaths, UserKey
from tests.fakes import FakeOpenAI, Reply
from tests.runner.conftest import GatewayFactory

SHARED = "The office plants are watered on Mondays."
PROFILE = "Ada grows tomatoes."


def prepare(home: Path) -> tuple[Path, Path]:
    home.mkdir(mode=0o700, exist_ok=True)
    paths = ChorusPaths(home)
    user_file = paths.user_file(UserKey("testchat", "2"))
    for path, text in ((paths.memory_file, SHARED), (user_file, PROFILE)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return paths.memory_file, user_file


def tool_names(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools", [])]


def memory_targets(request: dict[str, Any]) -> list[str]:
    [memory] = [t for t in request["tools"] if t["function"]["name"] == "memory"]
    return list(memory["function"]["parameters"]["properties"]["target"]["enum"])


def is_flush(request: dict[str, Any]) -> bool:
    return any(m.get("content") == FLUSH_PROMPT for m in request["messages"])


async def test_both_off_no_memory_tool_no_files_in_the_prompt_no_flush(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    memory_file, user_file = prepare(chorus_home)
    gw = await make_gateway(
        CHORUS_MEMORY__MEMORY_ENABLED="false",
        CHORUS_MEMORY__USER_PROFILE_ENABLED="false",
        CHORUS_MEMORY__FLUSH_MIN_TURNS="0",
        CHORUS_MEMORY__NUDGE_INTERVAL="1",
    )
    server.reply("hello Ada")
    await gw.ask("hi, I grow peppers too", user="2")
    turn = server.last_request
    assert "memory" not in tool_names(turn) and "session_search" in tool_names(turn)
    prompt = turn["messages"][0]["content"]
    assert SHARED not in prompt and PROFILE not in prompt
    assert "memory tool" not in prompt and "persistent memory" not in prompt
    assert "saved anything to memory" not in json.dumps(turn)  # no nudge either

    server.tool_call("memory", {"action": "add", "target": "user", "content": "Grows peppers"})
    await gw.ask("/new", user="2")
    await gw.settle()
    assert not any(is_flush(r) for r in server.requests)
    assert user_file.read_text(encoding="utf-8") == PROFILE
    assert memory_file.read_text(encoding="utf-8") == SHARED


async def test_memory_off_profile_on(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    memory_file, user_file = prepare(chorus_home)
    gw = await make_gateway(
        CHORUS_MEMORY__MEMORY_ENABLED="false",
        CHORUS_MEMORY__FLUSH_MIN_TURNS="0",
        CHORUS_AUTH__ADMINS="testchat:2",  # an admin's write to MEMORY.md would land directly
    )
    server.tool_call("memory", {"action": "add", "target": "memory", "content": "Lunch at one"})
    server.reply("understood")
    await gw.ask("lunch is at one for everyone", user="2")
    turn = server.requests[0]
    assert memory_targets(turn) == ["user"]
    assert "'memory': your notes" not in json.dumps(turn["tools"])
    prompt = turn["messages"][0]["content"]
    assert PROFILE in prompt and SHARED not in prompt
    [result] = [m for m in server.last_request["messages"] if m["role"] == "tool"]
    refused = json.loads(result["content"])
    assert refused["success"] is False and "switched off" in refused["error"]
    assert memory_file.read_text(encoding="utf-8") == SHARED

    server.push(
        Reply.of_tool_calls(
            [
                ("memory", {"action": "add", "target": "memory", "content": "Lunch at one"}),
                ("memory", {"action": "add", "target": "user", "content": "Eats at one"}),
            ]
        )
    )
    await gw.ask("/new", user="2")
    await gw.settle()
    [flush] = [r for r in server.requests if is_flush(r)]
    assert memory_targets(flush) == ["user"]
    assert memory_file.read_text(encoding="utf-8") == SHARED
    assert "Eats at one" in user_file.read_text(encoding="utf-8")

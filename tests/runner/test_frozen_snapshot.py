"""The system prompt is frozen for a session, through an eviction and rebuild of its agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memory.paths import ChorusPaths
from tests.fakes import FakeOpenAI
from tests.runner.conftest import GatewayFactory, user_messages


def system_prompt(request: dict[str, Any]) -> str:
    first = request["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


async def test_a_rebuilt_agent_keeps_its_sessions_system_prompt(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    chorus_home.mkdir(mode=0o700, exist_ok=True)
    memory_file = ChorusPaths(chorus_home).memory_file
    memory_file.parent.mkdir(parents=True, exist_ok=True)
    memory_file.write_text("The office plants are watered on Mondays.", encoding="utf-8")
    gw = await make_gateway(CHORUS_SESSIONS__MAX_LIVE="1")
    server.reply("noted")
    await gw.ask("hello", user="2")
    before = system_prompt(server.last_request)
    assert "watered on Mondays" in before

    memory_file.write_text("The office plants are watered on Fridays.", encoding="utf-8")
    server.reply("hi 3")
    await gw.ask("someone else", user="3")  # evicts user 2's agent
    assert gw.runner.sessions.live_agents == 1
    assert "watered on Fridays" in system_prompt(server.last_request)  # a new session

    server.reply("again")
    await gw.ask("still there?", user="2")
    assert user_messages(server.last_request) == ["hello", "still there?"]
    assert system_prompt(server.last_request) == before  # byte for byte: the cache holds
    sid = next(s.session_id for s in gw.runner.sessions.sessions if s.key.user_id == "2")
    record = gw.stack.db.db.get_session(sid)
    assert record is not None and record.system_prompt == before

"""The memory flush of a compression offers only ``memory``: a call to anything else is
refused and audited through the session's tool gate."""

from __future__ import annotations

import json
import time
from pathlib import Path

from agent.tools.policy import ToolGate, ToolPolicy
from gateway.access import GatewayDB
from tests.agent.conftest import MakeAgent
from tests.fakes import FakeOpenAI


async def test_a_flush_call_to_another_tool_is_refused_and_audited(
    server: FakeOpenAI, make_agent: MakeAgent, tmp_path: Path
) -> None:
    agent = await make_agent("telegram:7")
    with GatewayDB(tmp_path / "state.db") as gateway_db:

        def audit(actor: str, command: str, args: str, outcome: str) -> None:
            gateway_db.audit(actor, command, args, outcome, time.time())

        agent.tool_gate = ToolGate(agent.session, ToolPolicy, lambda _: False, audit)
        server.reply("Hello.")
        await agent.run_turn("hi")
        server.tool_calls([("fact_store", {"action": "add", "content": "x"}), ("memory", {})])
        await agent.flush(min_turns=0)
        flush_request = server.last_request
        assert [t["function"]["name"] for t in flush_request["tools"]] == ["memory"]
        entries = gateway_db.audit_entries()
    sid = agent.session.session_id
    assert [(e.actor, e.command, e.args, e.outcome) for e in entries] == [
        ("telegram:7", "model tool call", f"session {sid}: fact_store", "refused:not offered")
    ]
    assert len(agent.history) == 2  # the flush left no trace


async def test_a_turn_call_to_a_made_up_tool_is_refused_and_audited(
    server: FakeOpenAI, make_agent: MakeAgent, tmp_path: Path
) -> None:
    agent = await make_agent("telegram:7")
    with GatewayDB(tmp_path / "state.db") as gateway_db:

        def audit(actor: str, command: str, args: str, outcome: str) -> None:
            gateway_db.audit(actor, command, args, outcome, time.time())

        agent.tool_gate = ToolGate(agent.session, ToolPolicy, lambda _: False, audit)
        server.tool_call("launch_rockets", {"count": 3})
        server.reply("I can't.")
        await agent.run_turn("launch")
        entries = gateway_db.audit_entries()
    [result] = [m for m in server.last_request["messages"] if m["role"] == "tool"]
    assert "unknown tool 'launch_rockets'" in json.loads(result["content"])["error"]
    assert [e.outcome for e in entries] == ["refused:not offered"]

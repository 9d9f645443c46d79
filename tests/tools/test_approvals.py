"""Approval of ``ask`` tools with the typed commands (``/approve ID``, ``/deny ID``), in the
real gateway on a fake clock: a real MCP server child, the fake LLM scripting the call."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from agent.tools.settings import ToolsSettings
from tests.fakes import FakeOpenAI
from tests.runner.conftest import Gateway, GatewayFactory, close_without_ending
from tests.tools.conftest import calls, stdio_server
from tests.waiting import until

ASK_ECHO = [
    {"tools": ["demo__echo"], "action": "ask"},
    {"tools": ["*__*"], "action": "allow"},
]


def _config(home: Path, state: Path, **tools: Any) -> None:
    home.mkdir(mode=0o700, exist_ok=True)
    section = {"mcp_servers": {"demo": stdio_server(state)}, "policy": ASK_ECHO, **tools}
    path = home / "config.yaml"
    path.write_text(yaml.safe_dump({"tools": section}), encoding="utf-8")
    path.chmod(0o600)


async def _gateway(make_gateway: GatewayFactory, home: Path, state: Path, **tools: Any) -> Gateway:
    _config(home, state, **tools)
    gw = await make_gateway()
    mcp = gw.stack.mcp
    assert mcp is not None
    await until(lambda: all(h.up or h.last_error for h in mcp.health()), what="servers tried")
    return gw


async def _prompt(gw: Gateway, chat_id: str) -> tuple[str, str]:
    """The approval prompt shown in ``chat_id``: its text and its id."""
    found: list[str] = []

    def shown() -> bool:
        found[:] = [t for t in gw.adapter.texts(chat_id) if re.search(r"/approve \w+", t)]
        return bool(found)

    await until(shown, what="an approval prompt")
    match = re.search(r"/approve (\w+)", found[-1])
    assert match is not None
    return found[-1], match.group(1)


def _tool_results(request: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in request["messages"] if m["role"] == "tool"]


async def _told(gw: Gateway, chat_id: str, part: str) -> str:
    await until(lambda: any(part in t for t in gw.adapter.texts(chat_id)), what=part)
    return next(t for t in gw.adapter.texts(chat_id) if part in t)


async def test_approved_by_typing_approve(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path, tmp_path: Path
) -> None:
    state = tmp_path / "demo"
    gw = await _gateway(make_gateway, chorus_home, state)
    server.tool_call("demo__echo", {"text": "typed"})
    server.reply("Echoed.")
    await gw.say("echo please", "2")
    text, approval = await _prompt(gw, "dm-2")
    assert "Tool: echo" in text and '"text": "typed"' in text
    assert calls(state) == []
    await gw.say(f"/approve {approval}", "2")
    await _told(gw, "dm-2", "Echoed.")
    assert calls(state) == [{"tool": "echo", "arguments": {"text": "typed"}, "authorization": None}]
    assert "echo: typed" in _tool_results(server.requests[1])[0]


async def test_someone_else_cannot_decide_and_no_answer_is_a_refusal(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path, tmp_path: Path
) -> None:
    state = tmp_path / "demo"
    gw = await _gateway(make_gateway, chorus_home, state, approval_timeout=120)
    server.tool_call("demo__echo", {"text": "wait"})
    server.reply("Nobody answered, so I did not.")
    await gw.say("echo please", "2")
    _, approval = await _prompt(gw, "dm-2")

    answer = await gw.adapter.command(f"/approve {approval}", user_id="3")
    assert "not yours" in answer
    answer = await gw.adapter.command(f"/deny {approval}", user_id="1")  # an admin, not asked
    assert "not yours" in answer
    assert len(server.requests) == 1

    await gw.clock.advance(119)
    assert len(server.requests) == 1  # still waiting
    await gw.clock.advance(2)
    await _told(gw, "dm-2", "Nobody answered, so I did not.")
    assert "nobody answered within 120 s" in _tool_results(server.requests[1])[0]
    assert "expired" in await _told(gw, "dm-2", f"Approval {approval} for demo__echo expired")
    assert calls(state) == []
    late = await gw.adapter.command(f"/approve {approval}", user_id="2")
    assert "no longer pending (timeout)" in late
    rows = gw.stack.gateway_db.audit_entries()
    assert any(r.command == "tool approval" and r.outcome.startswith("timeout") for r in rows)


async def test_admin_approval_goes_to_the_admins_direct_chat(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path, tmp_path: Path
) -> None:
    state = tmp_path / "demo"
    gw = await _gateway(make_gateway, chorus_home, state, approval="admin")
    server.tool_call("demo__echo", {"text": "admin"})
    server.reply("The admin let me.")
    await gw.say("echo please", "2")
    text, approval = await _prompt(gw, "dm-1")
    assert "for testchat:2" in text
    assert not [t for t in gw.adapter.texts("dm-2") if t.startswith("Approval ")]
    assert "not yours" in await gw.adapter.command(f"/approve {approval}", user_id="2")
    assert "Approved" in await gw.adapter.command(f"/approve {approval}", user_id="1")
    await _told(gw, "dm-2", "The admin let me.")
    assert [c["arguments"] for c in calls(state)] == [{"text": "admin"}]


async def test_a_restart_with_a_pending_approval_tells_the_person_it_expired(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path, tmp_path: Path
) -> None:
    state = tmp_path / "demo"
    gw = await _gateway(make_gateway, chorus_home, state)
    server.tool_call("demo__echo", {"text": "before"})
    await gw.say("echo please", "2")
    _, approval = await _prompt(gw, "dm-2")
    await close_without_ending(gw)  # the process dies while the turn waits

    server.reply("Answered after the restart.")
    again = await make_gateway()
    told = await _told(again, "dm-2", f"Approval {approval}")
    assert "expired" in told and "restarted" in told
    late = await again.adapter.command(f"/approve {approval}", user_id="2")
    assert "no longer pending (expired)" in late
    assert calls(state) == []


async def test_long_arguments_are_shown_whole_with_the_answer_on_the_last_part(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path, tmp_path: Path
) -> None:
    state = tmp_path / "demo"
    gw = await _gateway(make_gateway, chorus_home, state)
    long = " ".join(f"word{n}" for n in range(1500))  # about 10,000 characters
    server.tool_call("demo__echo", {"text": long})
    server.reply("Echoed it all.")
    await gw.say("echo this", "2")
    _, approval = await _prompt(gw, "dm-2")
    shown = [t for t in gw.adapter.texts("dm-2") if t != "Echoed it all."]
    limit = gw.adapter.capabilities.max_text_length
    assert len(shown) >= 3 and all(len(t) <= limit for t in shown)
    assert all(f"word{n}" in "".join(shown) for n in (0, 750, 1499))
    assert f"/approve {approval}" in shown[-1]
    await gw.say(f"/approve {approval}", "2")
    await _told(gw, "dm-2", "Echoed it all.")
    assert [c["arguments"] for c in calls(state)] == [{"text": long}]


async def test_a_stopped_turn_leaves_no_approval_that_claims_to_run(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path, tmp_path: Path
) -> None:
    state = tmp_path / "demo"
    gw = await _gateway(make_gateway, chorus_home, state)
    server.tool_call("demo__echo", {"text": "stopped"})
    await gw.say("echo please", "2")
    _, approval = await _prompt(gw, "dm-2")
    await gw.say("/stop", "2")
    await until(lambda: gw.runner.sessions.quiet, what="the turn stopped")
    answer = await gw.adapter.command(f"/approve {approval}", user_id="2")
    assert "expired" in answer and "stopped" in answer
    assert calls(state) == []


def test_the_readme_approval_settings_load_as_written() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n### Approvals\n", 1)[1].split("\n## ", 1)[0].split("\n### ")[0]
    [config] = re.findall(r"```yaml\n(.*?)```", section, re.S)
    tools = ToolsSettings.model_validate(yaml.safe_load(config)["tools"])
    assert (tools.approval, tools.approval_timeout) == ("person", 120.0)

"""Approval of an ``ask`` tool on Slack: the prompt comes with Block Kit buttons, a click
runs as ``/approve ID`` / ``/deny ID`` from whoever clicked, answered to them alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.slack.conftest import ANN, BOB, DM_ANN, GatewayFactory, SlackGateway
from tests.tools.conftest import calls, stdio_server, write_config
from tests.waiting import until

ASK_ECHO = [
    {"tools": ["demo__echo"], "action": "ask"},
    {"tools": ["*__*"], "action": "allow"},
]


async def _gateway(make_gateway: GatewayFactory, home: Path, state: Path) -> SlackGateway:
    write_config(home, {"demo": stdio_server(state)}, ASK_ECHO)
    gw = await make_gateway()
    mcp = gw.stack.mcp
    assert mcp is not None
    await until(lambda: all(h.up or h.last_error for h in mcp.health()), what="servers tried")
    return gw


def _buttons(blocks: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [
        (element["action_id"], element["text"]["text"], element["value"])
        for block in blocks
        if block["type"] == "actions"
        for element in block["elements"]
    ]


async def test_a_click_of_the_person_asked_approves_and_no_one_else_s_does(
    make_gateway: GatewayFactory, chorus_home: Path, tmp_path: Path
) -> None:
    state = tmp_path / "demo"
    gw = await _gateway(make_gateway, chorus_home, state)
    slack, llm = gw.slack, gw.server
    llm.tool_call("demo__echo", {"text": "slack"})
    llm.reply("Echoed on Slack.")
    await gw.event(slack.person("echo please", user=ANN, channel=DM_ANN))

    await until(lambda: any(p.blocks for p in slack.posted_in(DM_ANN)), what="a prompt")
    prompt = next(p for p in slack.posted_in(DM_ANN) if p.blocks)
    assert prompt.blocks is not None
    [(approve_id, approve, command), (_, deny, _)] = _buttons(prompt.blocks)
    assert (approve, deny) == ("Approve", "Deny")
    assert command.startswith("/approve ")
    sections = " ".join(b["text"]["text"] for b in prompt.blocks if b["type"] == "section")
    assert "Tool: echo" in sections and "Server: demo" in sections

    url = await gw.click(approve_id, command, user=BOB, channel=DM_ANN)
    answer = await slack.wait_response(url)
    assert "not yours" in answer["text"] and answer["response_type"] == "ephemeral"
    assert calls(state) == [] and len(llm.requests) == 1

    url = await gw.click(approve_id, command, user=ANN, channel=DM_ANN)
    assert "Approved" in (await slack.wait_response(url))["text"]
    await until(lambda: any(p.text == "Echoed on Slack." for p in slack.posted_in(DM_ANN)))
    assert [c["arguments"] for c in calls(state)] == [{"text": "slack"}]

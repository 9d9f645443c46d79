"""Approval in the chat for an ``ask`` tool, through the whole gateway on Telegram: the
prompt comes with an inline keyboard, a press runs as ``/approve ID`` / ``/deny ID`` from
whoever pressed it, and only the person asked decides."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.fakes.telegram_api import BotMessage, FakeTelegram
from tests.telegram.conftest import ANN, BOB, GROUP, GatewayFactory, TelegramGateway
from tests.tools.conftest import calls, stdio_server, write_config
from tests.waiting import until

ASK_ECHO = [
    {"tools": ["demo__echo"], "action": "ask"},
    {"tools": ["*__*"], "action": "allow"},
]
HIDDEN = "hi\u200bthere\u202e"
"""Arguments with a zero-width space and a right-to-left override in them."""


async def _gateway(make_gateway: GatewayFactory, home: Path, state: Path) -> TelegramGateway:
    write_config(home, {"demo": stdio_server(state)}, ASK_ECHO)
    gw = await make_gateway()
    mcp = gw.stack.mcp
    assert mcp is not None
    await until(lambda: all(h.up or h.last_error for h in mcp.health()), what="servers tried")
    return gw


async def _prompt(tg: FakeTelegram, chat_id: int) -> BotMessage:
    await tg.wait_for(
        lambda: any(m.reply_markup for m in tg.in_chat(chat_id)), 15, "an approval prompt"
    )
    return next(m for m in tg.in_chat(chat_id) if m.reply_markup)


def _approval_id(prompt: BotMessage) -> str:
    found = re.search(r"/approve (\w+)", prompt.text)
    assert found is not None, prompt.text
    return found.group(1)


def _tool_results(request: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in request["messages"] if m["role"] == "tool"]


async def test_approved_by_the_button_of_the_person_asked_and_not_by_anyone_else(
    make_gateway: GatewayFactory, chorus_home: Path, tmp_path: Path
) -> None:
    state = tmp_path / "demo"
    gw = await _gateway(make_gateway, chorus_home, state)
    tg, llm = gw.telegram, gw.server
    llm.tool_call("demo__echo", {"text": HIDDEN})
    llm.reply("The echo said hi.")
    tg.message("@chorus_test_bot please echo", user_id=ANN, chat_id=GROUP)

    prompt = await _prompt(tg, GROUP)
    approval = _approval_id(prompt)
    assert "demo__echo" in json.dumps(llm.requests[0]["tools"])  # the ask tool is offered
    assert "Tool: echo" in prompt.text and "Server: demo" in prompt.text
    assert "\u200b" not in prompt.text and "\u202e" not in prompt.text
    assert "hi" in prompt.text and "there" in prompt.text
    assert "U+200B" in prompt.text.upper() or "200B" in prompt.text.upper()
    assert prompt.reply_markup is not None
    buttons = [b for row in prompt.reply_markup["inline_keyboard"] for b in row]
    assert [b["text"] for b in buttons] == ["Approve", "Deny"]
    assert [b["callback_data"] for b in buttons] == [f"/approve {approval}", f"/deny {approval}"]

    bobs = tg.press(prompt, f"/approve {approval}", user_id=BOB, first_name="Bob")
    await tg.wait_for(lambda: bobs in tg.callback_answers, 15, "Bob's press answered")
    assert "not yours" in tg.callback_answers[bobs]["text"]
    assert calls(state) == []  # Bob's press changed nothing
    assert len(llm.requests) == 1

    anns = tg.press(prompt, f"/approve {approval}", user_id=ANN)
    await tg.wait_for(lambda: anns in tg.callback_answers, 15, "Ann's press answered")
    assert "Approved" in tg.callback_answers[anns]["text"]
    await until(lambda: len(llm.requests) == 2, what="the model gets the result")
    assert calls(state) == [{"tool": "echo", "arguments": {"text": HIDDEN}, "authorization": None}]
    [result] = _tool_results(llm.requests[1])
    assert "echo: " in result
    await tg.wait_for(
        lambda: any(m.text == "The echo said hi." for m in tg.in_chat(GROUP)), 15, "the answer"
    )
    rows = gw.stack.gateway_db.audit_entries()
    assert any(r.command == "tool approval" and r.outcome.startswith("approved") for r in rows)


async def test_denied_by_the_button_no_call_reaches_the_server(
    make_gateway: GatewayFactory, chorus_home: Path, tmp_path: Path
) -> None:
    state = tmp_path / "demo"
    gw = await _gateway(make_gateway, chorus_home, state)
    tg, llm = gw.telegram, gw.server
    llm.tool_call("demo__echo", {"text": "no"})
    llm.reply("Fine, I did not.")
    tg.message("please echo", user_id=ANN)

    prompt = await _prompt(tg, ANN)
    approval = _approval_id(prompt)
    pressed = tg.press(prompt, f"/deny {approval}", user_id=ANN)
    await tg.wait_for(lambda: pressed in tg.callback_answers, 15, "the press answered")
    assert "Denied" in tg.callback_answers[pressed]["text"]
    await until(lambda: len(llm.requests) == 2, what="the model is told")
    [result] = _tool_results(llm.requests[1])
    assert "denied" in result and "not run" in result
    assert calls(state) == []

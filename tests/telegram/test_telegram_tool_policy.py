"""The tool policy on a real gateway: two people in one group, one allowed a tool, one not."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from agent.flush import FLUSH_PROMPT
from tests.fakes import Reply
from tests.telegram.conftest import ADMIN, ANN, BOB, GROUP, GatewayFactory, TelegramGateway

pytest.importorskip("numpy")

POLICY = """\
memory:
  provider: holographic
  providers:
    holographic:
      embeddings: "off"
tools:
  policy:
    - people: [telegram:ANN]
      tools: [fact_*]
      action: allow
    - roles: [user]
      tools: [fact_*]
      action: BOB_ACTION
"""
FACT = {"action": "add", "content": "Ann's favourite tea is sencha."}


def offered(request: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in request.get("tools", [])}


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(m["content"]) for m in request["messages"] if m["role"] == "tool"]


def audit_rows(gw: TelegramGateway) -> list[tuple[str, str, str, str]]:
    entries = gw.stack.gateway_db.audit_entries()
    return [(e.actor, e.command, e.args, e.outcome) for e in entries]


async def started(gw: TelegramGateway, *users: int) -> None:
    """Each of ``users`` opened their private chat with the bot (private answers go there)."""
    for user in users:
        gw.telegram.message("/start", user_id=user)
        await gw.telegram.wait_messages(user, 1)


def write_policy(home: Path, bob: str) -> None:
    policy = POLICY.replace("ANN", str(ANN)).replace("BOB_ACTION", bob)
    (home / "config.yaml").write_text(policy)


async def policy_gateway(
    make_gateway: GatewayFactory, home: Path, bob: str = "deny", **env: str
) -> TelegramGateway:
    home.mkdir(mode=0o700, exist_ok=True)
    write_policy(home, bob)
    return await make_gateway(**env)


async def test_a_tool_allowed_to_one_person_is_never_offered_to_the_other_nor_run_for_them(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    gw = await policy_gateway(make_gateway, chorus_home)
    tg, llm = gw.telegram, gw.server
    llm.tool_call("fact_store", FACT)
    llm.reply("Noted, Ann.")
    tg.message("@chorus_test_bot my favourite tea is sencha", user_id=ANN, chat_id=GROUP)
    await tg.wait_messages(GROUP, 1)
    await gw.settle()
    ann_first, ann_second = llm.requests[0], llm.requests[1]
    assert {"fact_store", "fact_feedback"} <= offered(ann_first)
    [stored] = tool_results(ann_second)
    assert stored.get("success") is not False and "fact_id" in json.dumps(stored)

    # Bob's model is scripted to call the tool anyway (injected, or made up)
    llm.tool_call("fact_store", {"action": "add", "content": "Bob was here"})
    llm.reply("I could not store that.")
    tg.message("@chorus_test_bot store a fact: Bob was here", user_id=BOB, chat_id=GROUP)
    await tg.wait_messages(GROUP, 2)
    await gw.settle()
    bob_requests = llm.requests[2:]
    assert len(bob_requests) == 2
    for request in bob_requests:
        assert not offered(request) & {"fact_store", "fact_feedback"}
        assert {"memory", "session_search"} <= offered(request)
    [refused] = tool_results(bob_requests[1])
    assert refused["success"] is False
    assert "fact_store" in refused["error"] and "not" in refused["error"]
    bob_session = next(
        s.session_id for s in gw.runner.sessions.sessions if str(s.user_key) == f"telegram:{BOB}"
    )
    assert (
        f"telegram:{BOB}",
        "model tool call",
        f"session {bob_session}: fact_store",
        "refused:not offered, deny (rule 2)",
    ) in audit_rows(gw)
    assert "fact_id" not in json.dumps(refused)  # never stored


async def test_a_tool_offered_and_then_denied_by_a_reload_is_refused_when_called(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    """The policy is asked again when the call is made, not only when the list was built."""
    gw = await policy_gateway(make_gateway, chorus_home, bob="allow")
    tg, llm = gw.telegram, gw.server
    await started(gw, ADMIN)
    asked, reloaded = threading.Event(), threading.Event()

    def call_after_the_reload(body: dict[str, Any]) -> Reply | str:
        if not any(m["role"] == "tool" for m in body["messages"]):
            asked.set()
            reloaded.wait(10)
            return Reply.of_tool_calls([("fact_store", {"action": "add", "content": "mint"})])
        return "I could not store that."

    llm.responder(call_after_the_reload)
    tg.message("@chorus_test_bot remember I like mint", user_id=BOB, chat_id=GROUP)
    assert await asyncio.to_thread(asked.wait, 10)
    write_policy(chorus_home, "deny")
    tg.message("/admin reload", user_id=ADMIN)
    await tg.wait_messages(ADMIN, 2)
    reloaded.set()
    await tg.wait_messages(GROUP, 1)
    await gw.settle()
    first, second = llm.requests[0], llm.requests[1]
    assert "fact_store" in offered(first)  # allowed when the request was built
    [refused] = tool_results(second)
    assert refused["success"] is False and "denies" in refused["error"]
    rows = [row for row in audit_rows(gw) if row[1] == "model tool call"]
    assert [(actor, outcome) for actor, _, _, outcome in rows] == [
        (f"telegram:{BOB}", "refused:deny (rule 2)")
    ]
    assert "fact_store" not in offered(llm.requests[-1])


async def test_tools_and_admin_tools_answer_for_the_person_and_ask_waits_for_approval(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    gw = await policy_gateway(make_gateway, chorus_home, bob="ask")
    tg, llm = gw.telegram, gw.server
    await started(gw, ANN, BOB, ADMIN)
    tg.message("/tools", user_id=ANN, chat_id=GROUP)
    tg.message("/tools", user_id=BOB, chat_id=GROUP)
    ann = (await tg.wait_messages(ANN, 2))[1].text
    bob = (await tg.wait_messages(BOB, 2))[1].text
    assert "• fact_store" in ann and "• fact_feedback" in ann and "approval" not in ann
    assert "fact_store" not in bob.split("Need approval")[0]
    assert "Need approval each time: fact_feedback, fact_store" in bob

    tg.message(f"/admin tools telegram:{BOB}", user_id=ADMIN, chat_id=GROUP)
    shown = (await tg.wait_messages(ADMIN, 2))[1].text
    assert f"Tool policy for telegram:{BOB} (user)" in shown
    assert "• fact_store: in a DM ask (rule 2) · in this group ask (rule 2)" in shown
    assert "1. people" not in shown and "2. roles user · tools fact_* → ask" in shown
    tg.message("/admin tools", user_id=ADMIN)
    rules = (await tg.wait_messages(ADMIN, 3))[2].text
    assert f"1. people telegram:{ANN} · tools fact_* → allow" in rules
    tg.message("/admin tools", user_id=BOB)
    assert (await tg.wait_messages(BOB, 3))[2].text == "That command is for admins only."
    await gw.settle()
    group = " ".join(m.text for m in tg.in_chat(GROUP))
    assert "fact_" not in group  # the answers went privately

    # an ``ask`` tool is offered, and a call to it waits for Bob's approval: he denies it
    llm.tool_call("fact_store", {"action": "add", "content": "Bob likes mint"})
    llm.reply("You did not let me.")
    tg.message("@chorus_test_bot remember I like mint", user_id=BOB, chat_id=GROUP)
    await tg.wait_for(lambda: any(m.reply_markup for m in tg.in_chat(GROUP)), 15, "a prompt")
    prompt = next(m for m in tg.in_chat(GROUP) if m.reply_markup)
    assert prompt.reply_markup is not None
    deny = prompt.reply_markup["inline_keyboard"][0][1]["callback_data"]
    tg.press(prompt, deny, user_id=BOB)
    await tg.wait_for(
        lambda: any(m.text == "You did not let me." for m in tg.in_chat(GROUP)), 15, "answer"
    )
    await gw.settle()
    first, second = llm.requests[-2:]
    assert "fact_store" in offered(first)
    [refused] = tool_results(second)
    assert refused["success"] is False and "denied the approval" in refused["error"]
    outcomes = [row[3] for row in audit_rows(gw) if row[1] == "tool approval"]
    assert [o.split()[0] for o in outcomes] == ["denied"]
    admin_rows = [row for row in audit_rows(gw) if row[1] == "/admin"]
    assert (f"telegram:{BOB}", "/admin", "tools", "refused") in admin_rows


async def test_retry_and_a_turn_resumed_after_a_crash_pass_the_same_check(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    gw = await policy_gateway(make_gateway, chorus_home)
    tg, llm = gw.telegram, gw.server
    llm.reply("Hello Bob.")
    tg.message("hello", user_id=BOB)
    await tg.wait_messages(BOB, 1)
    await gw.settle()

    llm.tool_call("fact_store", {"action": "add", "content": "retried"})
    llm.reply("Hello again.")
    tg.message("/retry", user_id=BOB)
    await tg.wait_messages(BOB, 2)
    await gw.settle()
    retried, after = llm.requests[-2:]
    assert "fact_store" not in offered(retried)
    assert tool_results(after)[0]["success"] is False

    llm.reply("never delivered", delay=30)
    tg.message("@chorus_test_bot what now?", user_id=BOB, chat_id=GROUP)
    await tg.wait_for(lambda: llm.in_flight == 1, what="the answer in progress")
    await tg.wait_for(lambda: not tg.pending(), what="the update confirmed")
    await gw.crash()

    seen = len(llm.requests)
    llm.tool_call("fact_store", {"action": "add", "content": "resumed"})
    llm.reply("Resumed.")
    again = await policy_gateway(make_gateway, chorus_home)
    await tg.wait_for(
        lambda: any(m.text == "Resumed." for m in tg.in_chat(GROUP)), what="the resumed answer"
    )
    await again.settle()
    resumed, answered = llm.requests[seen:]
    assert "what now?" in json.dumps(resumed["messages"][-1])
    assert "fact_store" not in offered(resumed)
    assert tool_results(answered)[-1]["success"] is False
    outcomes = [row[3] for row in audit_rows(again) if row[1] == "model tool call"]
    assert outcomes == ["refused:not offered, deny (rule 2)"] * 2


async def test_the_session_end_flush_job_refuses_and_audits_any_tool_but_memory(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    gw = await policy_gateway(make_gateway, chorus_home, CHORUS_MEMORY__FLUSH_MIN_TURNS="0")
    tg, llm = gw.telegram, gw.server

    def respond(body: dict[str, Any]) -> Reply | str:
        if body["messages"][-1].get("content") == FLUSH_PROMPT:
            return Reply.of_tool_calls([("fact_store", {"action": "add", "content": "flushed"})])
        return "ok"

    llm.responder(respond)
    tg.message("hello", user_id=BOB)
    await tg.wait_messages(BOB, 1)
    await gw.settle()
    session = gw.runner.sessions.sessions[0].session_id
    tg.message("/new", user_id=BOB)
    await tg.wait_messages(BOB, 2)
    await gw.settle()
    await asyncio.to_thread(gw.stack.background.queue.flush, 30)
    flushes = [r for r in llm.requests if r["messages"][-1].get("content") == FLUSH_PROMPT]
    assert len(flushes) == 1 and offered(flushes[0]) == {"memory"}
    rows = [row for row in audit_rows(gw) if row[1] == "model tool call"]
    assert rows == [
        (
            f"telegram:{BOB}",
            "model tool call",
            f"session {session}: fact_store",
            "refused:not offered",
        )
    ]


async def test_in_a_shared_group_session_the_policy_follows_who_wrote_the_turn(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    gw = await policy_gateway(make_gateway, chorus_home, CHORUS_SESSIONS__SCOPE="chat")
    tg, llm = gw.telegram, gw.server
    llm.reply("Hi Ann.")
    tg.message("@chorus_test_bot hi", user_id=ANN, chat_id=GROUP)
    await tg.wait_messages(GROUP, 1)
    await gw.settle()
    llm.tool_call("fact_store", {"action": "add", "content": "Bob was here"})
    llm.reply("Not for you.")
    tg.message("@chorus_test_bot store: Bob was here", user_id=BOB, chat_id=GROUP)
    await tg.wait_messages(GROUP, 2)
    await gw.settle()
    assert len(gw.runner.sessions.sessions) == 1  # one session, both people in it
    ann, bob, bob_after = llm.requests
    assert "fact_store" in offered(ann) and "fact_store" not in offered(bob)
    assert tool_results(bob_after)[0]["success"] is False
    [row] = [row for row in audit_rows(gw) if row[1] == "model tool call"]
    assert row[0] == f"telegram:{BOB}" and row[3] == "refused:not offered, deny (rule 2)"

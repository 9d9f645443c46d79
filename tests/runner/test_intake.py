"""The runner's intake: privacy between users, auth, commands, gating, bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gateway._texts import EMPTY, TOO_LONG
from gateway.adapters import TestChatAdapter
from gateway.app import open_stack
from tests.fakes import FakeOpenAI, Reply
from tests.runner.conftest import GatewayFactory, gateway_settings


def profile_writer(body: dict) -> Reply | str:
    """Saves 'I am X' as the user's profile; otherwise answers plainly."""
    last = body["messages"][-1]
    if last["role"] == "user" and "I am " in str(last["content"]):
        name = str(last["content"]).split("I am ")[1].split(".")[0]
        return Reply.of_tool_calls(
            [("memory", {"action": "add", "target": "user", "content": f"Profile of {name}"})]
        )
    return "ok"


async def test_two_users_in_group_and_dms_see_only_their_own_profile(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway()
    server.responder(profile_writer)
    await gw.ask("I am Ada.", user="2")
    await gw.ask("I am Bob.", user="3")
    await gw.ask("/new", user="2")
    await gw.ask("/new", user="3")
    for user, name in (("2", "Ada"), ("3", "Bob")):
        await gw.ask(f"dm from {name}", user=user)
        await gw.ask(f"group from {name}", user=user, chat_id="group-1", mentions_bot=True)
    for request in server.requests:
        text = json.dumps(request)
        if "from Ada" in text:
            assert "Profile of Bob" not in text and "Profile of Ada" in text
        if "from Bob" in text:
            assert "Profile of Ada" not in text and "Profile of Bob" in text


async def test_admin_commands_refused_for_non_admins_and_audited(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    refused = await gw.ask("/admin sessions", user="2")
    assert "admins only" in refused.text
    assert "I am telegram:1" not in refused.text
    fake_claim = await gw.ask("/admin users I am testchat:1 the admin", user="3")
    assert "admins only" in fake_claim.text
    allowed = await gw.ask("/admin sessions", user="1")
    assert "admins only" not in allowed.text
    entries = gw.stack.gateway_db.audit_entries(10)
    outcomes = sorted((e.actor, e.outcome) for e in entries)
    assert ("testchat:2", "refused") in outcomes and ("testchat:3", "refused") in outcomes
    assert ("testchat:1", "ok") in outcomes


async def test_groups_answer_only_when_addressed(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway()
    await gw.say("just chatting", user="2", chat_id="group-1")
    reply = await gw.ask("hey bot", user="2", chat_id="group-1", mentions_bot=True)
    assert reply.reply_to is not None  # group replies quote the message
    assert len(server.requests) == 1
    assert "just chatting" not in json.dumps(server.requests[0])


async def test_unknown_users_denied_by_default(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway()
    reply = await gw.ask("hello?", user="99")
    assert "private" in reply.text.lower() or "admin" in reply.text.lower()
    before = gw.stack.metrics.snapshot()["rejected_messages"]
    await gw.say("hello group", user="98", chat_id="group-1", mentions_bot=True)
    assert gw.stack.metrics.snapshot()["rejected_messages"] == before + 1  # decided, refused
    await gw.settle()
    assert gw.adapter.texts("group-1") == []
    assert server.requests == []


async def test_duplicate_message_ids_are_answered_once(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway()
    await gw.say("once please", user="2", message_id="same")
    await gw.say("once please", user="2", message_id="same")
    await gw.adapter.pop()
    await gw.settle()
    assert len(server.requests) == 1


async def test_empty_and_oversized_messages_get_clear_replies(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway()
    assert (await gw.ask("   ", user="2")).text == EMPTY
    huge = "x" * 1_000_000
    reply = await gw.ask(huge, user="2")
    assert reply.text == TOO_LONG.format(n=1_000_000, limit=32_000)
    assert server.requests == []


async def test_pairing_flow(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway(CHORUS_AUTH__POLICY="pairing")
    first = await gw.ask("let me in", user="50")
    code = re.search(r"\b([A-HJ-NP-Z2-9]{8})\b", first.text)
    assert code is not None, first.text
    card = await gw.adapter.pop(20)  # the admin is told, in their direct chat
    assert card.chat_id == "dm-1" and "testchat:50" in card.text and code.group(1) in card.text
    await gw.clock.advance(61 * 60)  # the code expired
    expired = await gw.ask(f"/admin approve {code.group(1)}", user="1")
    assert "expired" in expired.text.lower() or "unknown" in expired.text.lower()

    second = await gw.ask("let me in again", user="50")
    fresh = re.search(r"\b([A-HJ-NP-Z2-9]{8})\b", second.text)
    assert fresh is not None
    assert "Pairing request" in (await gw.adapter.pop(20)).text  # an hour on: told again
    approved = await gw.ask(f"/admin approve {fresh.group(1)}", user="1")
    assert "testchat:50" in approved.text
    assert any("You're in" in text for text in gw.adapter.texts("dm-50"))
    answer = await gw.ask("now?", user="50")
    assert answer.text == "ok"

    audit = [(e.actor, e.command, e.args, e.outcome) for e in gw.stack.gateway_db.audit_entries()]
    assert ("testchat:1", "/admin", "approve <code> → testchat:50", "ok") in audit
    assert ("testchat:1", "/admin", "approve <code> → testchat:50", "expired") in audit
    assert not any(code.group(1) in str(row) or fresh.group(1) in str(row) for row in audit)


async def test_a_strangers_admin_command_is_refused_and_audited_once(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    for _ in range(3):
        await gw.say("/admin users", user="666")
    await gw.say("/admin users", user="666", chat_id="group-9", is_direct=False)
    audit = [(e.actor, e.command, e.args, e.outcome) for e in gw.stack.gateway_db.audit_entries()]
    assert audit == [("testchat:666", "/admin", "users", "refused:not_allowed")]
    await gw.clock.advance(61)
    await gw.say("/admin allow testchat:666", user="666")
    newest = gw.stack.gateway_db.audit_entries(1)[0]
    assert (newest.actor, newest.args, newest.outcome) == (
        "testchat:666",
        "allow testchat:666",
        "refused:not_allowed",
    )


async def test_rate_limit_notice_once(make_gateway: GatewayFactory, server: FakeOpenAI) -> None:
    gw = await make_gateway(CHORUS_AUTH__RATE_LIMIT_PER_MINUTE="2")
    await gw.ask("one", user="2")
    await gw.ask("two", user="2")
    notice = await gw.ask("three", user="2")
    assert "faster" in notice.text
    await gw.say("four", user="2")
    await gw.settle()
    assert [d.text for d in gw.adapter.sent].count(notice.text) == 1
    assert len(server.requests) == 2
    await gw.clock.advance(60)
    assert (await gw.ask("five", user="2")).text == "ok"


async def test_the_rate_limit_notice_says_what_happens_to_the_dropped_messages(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway(CHORUS_AUTH__RATE_LIMIT_PER_MINUTE="2")
    await gw.ask("one", user="2")
    await gw.ask("two", user="2")
    notice = await gw.ask("three", user="2")
    await gw.say("four", user="2")
    await gw.settle()
    # one message refills in 30 s (2 a minute): the notice names that wait
    assert "skipped this one" in notice.text and "next 30 seconds" in notice.text
    assert "send it again" in notice.text
    await gw.clock.advance(60)
    await gw.settle()
    # and it is true: what was skipped is never answered, nothing comes later
    asked = [str(m["content"]) for r in server.requests for m in r["messages"]]
    assert not any("three" in text or "four" in text for text in asked)
    assert gw.adapter.texts("dm-2")[-1] == notice.text
    assert (await gw.ask("five", user="2")).text == "ok"
    assert gw.runner.sessions.quiet


async def test_help_whoami_and_unknown_command(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    help_text = (await gw.ask("/help", user="2")).text
    assert "/new" in help_text and "/admin" not in help_text
    assert "/admin" in (await gw.ask("/help", user="1")).text
    assert "testchat:2" in (await gw.ask("/whoami", user="2")).text
    assert "Unknown command /frobnicate" in (await gw.ask("/frobnicate", user="2")).text


async def test_admin_stats(make_gateway: GatewayFactory, server: FakeOpenAI) -> None:
    gw = await make_gateway()
    server.reply("one", usage={"prompt_tokens": 100, "completion_tokens": 20})
    await gw.ask("hello", user="2")
    stats = (await gw.ask("/admin stats", user="1")).text
    assert "Last minute: 2 message(s) in, 1 turn(s)." in stats
    assert "Tokens today (UTC): 120." in stats
    assert "llm_errors: 0" in stats
    await gw.clock.advance(61)
    assert (
        "Last minute: 1 message(s) in, 0 turn(s)." in (await gw.ask("/admin stats", user="1")).text
    )


async def test_a_failing_turn_gets_an_apology_not_the_error(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    gw = await make_gateway()
    await gw.stack.db.aclose()  # the transcript database is gone (disk trouble, say)
    reply = await gw.ask("are you ok?", user="2")
    assert reply.text == "Sorry — something went wrong on my side. Please try again."
    assert "SessionDBError" not in reply.text
    assert "SessionDBError" in caplog.text  # the operator gets the traceback


async def test_a_turn_failing_mid_way_gets_an_apology(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    gw = await make_gateway()
    await gw.ask("first", user="2")
    await gw.stack.db.aclose()
    reply = await gw.ask("second", user="2")
    assert reply.text == "Sorry — something went wrong on my side. Please try again."
    assert "turn of session" in caplog.text


async def test_the_platforms_prompt_hint_reaches_the_system_prompt(
    chorus_home: Path, server: FakeOpenAI
) -> None:
    chorus_home.mkdir(mode=0o700)
    settings = gateway_settings(chorus_home, server)
    adapter = TestChatAdapter(prompt_hint="You are talking on Pigeon Post. Be brief.")
    stack = await open_stack(settings, adapters=[adapter])
    try:
        await stack.start()
        await adapter.push("hello", user_id="2")
        await adapter.pop(20)
        assert "Pigeon Post" in server.last_request["messages"][0]["content"]
    finally:
        await stack.runner.shutdown(5)
        await stack.close()


async def test_a_user_id_shaped_like_a_chat_never_gets_the_chats_profile(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway(
        CHORUS_SESSIONS__SCOPE="chat", CHORUS_AUTH__ALLOWED_USERS="testchat:2,testchat:chat-g1"
    )
    server.tool_call("memory", {"action": "add", "target": "user", "content": "Group codeword"})
    server.reply("noted")
    await gw.ask("remember our codeword", user="2", chat_id="g1", mentions_bot=True)
    await gw.ask("hello", user="chat-g1")  # a DM from a user whose id looks like the chat's key
    system = server.last_request["messages"][0]["content"]
    assert "Group codeword" not in system
    keys = {str(live.user_key) for live in gw.runner.sessions.sessions}
    assert keys == {"testchat#chat:g1", "testchat:chat-g1"}

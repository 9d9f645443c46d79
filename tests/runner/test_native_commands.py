"""Native slash commands (a platform's command picker): private answers, one dispatch path."""

from __future__ import annotations

from tests.fakes import FakeOpenAI
from tests.runner.conftest import GatewayFactory


async def test_a_native_command_is_answered_privately_and_nothing_is_posted(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    answer = await gw.adapter.command("/whoami", user_id="2", user_name="Ann")
    assert "testchat:2 (Ann)" in answer
    assert gw.adapter.sent == []


async def test_help_lists_only_what_the_caller_may_use(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    user_help = await gw.adapter.command("/help", user_id="2")
    admin_help = await gw.adapter.command("/help", user_id="1")
    assert "/whoami" in user_help and "/admin" not in user_help
    assert "/admin" in admin_help


async def test_admin_native_command_for_admins_refused_and_audited_for_others(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    await gw.ask("hello", user="2")
    ok = await gw.adapter.command("/admin sessions", user_id="1")
    assert "open session" in ok and "testchat:2" in ok
    refused = await gw.adapter.command("/admin sessions", user_id="2")
    assert "admins only" in refused and "testchat:2" not in refused
    stranger = await gw.adapter.command("/admin users", user_id="666")
    assert "testchat:666" in stranger and "admins" not in stranger
    audit = [(e.actor, e.args, e.outcome) for e in gw.stack.gateway_db.audit_entries()]
    assert ("testchat:1", "sessions", "ok") in audit
    assert ("testchat:2", "sessions", "refused") in audit
    assert ("testchat:666", "users", "refused:not_allowed") in audit
    assert [d.text for d in gw.adapter.sent if d.kind != "reply"] == []


async def test_a_native_new_acts_on_the_callers_session_in_that_chat(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway()
    await gw.ask("remember the blue door", user="2")
    [first] = [s.session_id for s in gw.runner.sessions.sessions]
    assert "new session" in (await gw.adapter.command("/new", user_id="2")).lower()
    await gw.ask("hi again", user="2")
    [second] = [s.session_id for s in gw.runner.sessions.sessions]
    assert second != first
    assert "already" in (await gw.adapter.command("/new", user_id="3")).lower()


async def test_unknown_and_empty_native_commands(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    assert "Unknown command /nosuch" in await gw.adapter.command("/nosuch", user_id="2")
    assert "help" in (await gw.adapter.command("", user_id="2")).lower()


async def test_admin_users_prints_readable_lines(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    await gw.adapter.command("/admin allow testchat:50", user_id="1")
    lines = (await gw.adapter.command("/admin users", user_id="1")).splitlines()
    assert "testchat:1 — admin (config)" in lines
    [runtime] = [line for line in lines if line.startswith("testchat:50")]
    assert runtime.startswith("testchat:50 — allowed by testchat:1 on 2026-11-30 10:00 UTC")
    assert not any("UserAccessRow" in line for line in lines)

"""``/admin reload`` changes what it says it changes: one test per live setting.

Each test starts a gateway, edits ``config.yaml``, reloads as the admin, and
observes the new behaviour — without a restart. Keys that need a restart are
reported as such and keep their value.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml

from agent.agent import NUDGE
from agent.jobs import HANDOFF_PROMPT
from tests.fakes import FakeOpenAI
from tests.runner.conftest import Gateway, GatewayFactory, user_messages
from tests.waiting import until

ADMIN = "1"
BASE: dict[str, Any] = {
    "auth": {"admins": ["testchat:1"], "allowed_users": ["testchat:2", "testchat:3"]},
    "sessions": {"daily_reset_hour": None},
}


def write_config(home: Path, **sections: dict[str, Any]) -> None:
    merged = {**BASE, **sections}
    for name in ("auth", "sessions"):
        merged[name] = {**BASE[name], **sections.get(name, {})}
    path = home / "config.yaml"
    path.write_text(yaml.safe_dump(merged), encoding="utf-8")
    path.chmod(0o600)


async def reload(gw: Gateway) -> str:
    reply = (await gw.ask("/admin reload", user=ADMIN)).text
    assert "reloaded" in reply.lower(), reply
    return reply


async def gateway(make_gateway: GatewayFactory, home: Path, **initial: dict[str, Any]) -> Gateway:
    """A gateway whose auth and session settings come from config.yaml, for reloads."""
    home.mkdir(mode=0o700, exist_ok=True)
    write_config(home, **initial)
    return await make_gateway(
        CHORUS_AUTH__ADMINS=None,
        CHORUS_AUTH__ALLOWED_USERS=None,
        CHORUS_SESSIONS__DAILY_RESET_HOUR=None,
        CHORUS_MEMORY__NUDGE_INTERVAL=None,
    )


async def test_allowed_users(make_gateway: GatewayFactory, chorus_home: Path) -> None:
    gw = await gateway(make_gateway, chorus_home)
    assert "private" in (await gw.ask("hi", user="77")).text
    write_config(chorus_home, auth={"allowed_users": ["testchat:77"]})
    await reload(gw)
    assert (await gw.ask("hi again", user="77")).text == "ok"
    assert "private" in (await gw.ask("and me?", user="2")).text


async def test_admins(make_gateway: GatewayFactory, chorus_home: Path) -> None:
    gw = await gateway(make_gateway, chorus_home)
    assert "admins only" in (await gw.ask("/admin sessions", user="2")).text
    write_config(chorus_home, auth={"admins": ["testchat:1", "testchat:2"]})
    await reload(gw)
    assert "open session" in (await gw.ask("/admin sessions", user="2")).text


async def test_admin_rights_in_a_running_session_follow_a_reload(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    """The shared-MEMORY.md gate of a live session asks the admins in effect now."""
    gw = await gateway(make_gateway, chorus_home)
    await gw.ask("hello", user="2")  # the session and its agent exist before the reload
    write_config(chorus_home, auth={"admins": ["testchat:1", "testchat:2"]})
    await reload(gw)
    server.tool_call("memory", {"action": "add", "target": "memory", "content": "Lunch is at 1"})
    server.reply("saved")
    await gw.ask("note lunch for everyone", user="2")
    assert "Lunch is at 1" in (chorus_home / "memories" / "MEMORY.md").read_text()

    write_config(chorus_home)  # testchat:2 is no admin any more
    await reload(gw)
    server.tool_call("memory", {"action": "add", "target": "memory", "content": "Tea at 4"})
    server.reply("staged")
    await gw.ask("note tea for everyone", user="2")
    assert "Tea at 4" not in (chorus_home / "memories" / "MEMORY.md").read_text()
    staging = gw.stack.factory.staging
    assert staging is not None and [w.content for w in staging.pending()] == ["Tea at 4"]


async def test_policy(make_gateway: GatewayFactory, chorus_home: Path) -> None:
    gw = await gateway(make_gateway, chorus_home)
    assert "private" in (await gw.ask("hi", user="50")).text
    write_config(chorus_home, auth={"policy": "open"})
    await reload(gw)
    assert (await gw.ask("hi", user="51")).text == "ok"


async def test_rate_limit(make_gateway: GatewayFactory, chorus_home: Path) -> None:
    gw = await gateway(make_gateway, chorus_home)
    write_config(chorus_home, auth={"rate_limit_per_minute": 1})
    await reload(gw)
    assert (await gw.ask("one", user="2")).text == "ok"
    assert "faster than I can answer" in (await gw.ask("two", user="2")).text


async def test_pairing_codes_per_hour_and_their_ttl(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    gw = await gateway(make_gateway, chorus_home)
    write_config(
        chorus_home,
        auth={"policy": "pairing", "pairing_codes_per_hour": 1, "pairing_code_ttl_minutes": 7},
    )
    await reload(gw)
    first = (await gw.ask("hello", user="60")).text
    assert "pairing code" in first and "7 minutes" in first
    assert "Pairing request" in (await gw.adapter.pop(20)).text  # the admin is told
    assert "too many pairing codes" in (await gw.ask("/pair", user="60")).text


async def test_group_require_mention(make_gateway: GatewayFactory, chorus_home: Path) -> None:
    gw = await gateway(make_gateway, chorus_home)
    await gw.say("talking among ourselves", user="2", chat_id="g1", is_direct=False)
    await gw.settle()
    assert gw.adapter.texts("g1") == []
    write_config(chorus_home, gateway={"group_require_mention": False})
    await reload(gw)
    reply = await gw.ask("still talking", user="2", chat_id="g1", is_direct=False)
    assert reply.text == "ok" and reply.chat_id == "g1"


async def test_shutdown_timeout(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    gw = await gateway(make_gateway, chorus_home)
    write_config(chorus_home, gateway={"shutdown_timeout": 0.2})
    await reload(gw)
    server.reply("a very slow answer", delay=30)
    await gw.say("take your time", user="2")
    await until(lambda: server.in_flight, what="an LLM request in flight")
    await asyncio.wait_for(gw.runner.shutdown(), 20)
    await asyncio.to_thread(gw.stack.background.queue.flush, 30)
    assert "a very slow answer" not in gw.adapter.texts()
    ends = [r.end_reason for r in gw.stack.db.db.list_sessions(limit=10)]
    assert ends == ["shutdown"]


async def test_idle_minutes_apply_to_open_sessions(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    gw = await gateway(make_gateway, chorus_home)
    await gw.ask("hello", user="2")
    write_config(chorus_home, sessions={"idle_minutes": 5, "daily_reset_hour": None})
    await reload(gw)
    await gw.clock.advance(6 * 60)
    await gw.settle()
    assert [r.end_reason for r in gw.stack.db.db.list_sessions(limit=10)] == ["idle"]


async def test_daily_reset_hour_and_timezone(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    gw = await gateway(make_gateway, chorus_home)  # START is 10:00 UTC
    await gw.ask("hello", user="2")
    write_config(chorus_home, sessions={"daily_reset_hour": 12, "timezone": "Europe/Berlin"})
    await reload(gw)  # 12:00 in Berlin is 11:00 UTC on 30 November
    await gw.clock.advance(59 * 60)
    await gw.settle()
    assert gw.stack.db.db.list_sessions(limit=10)[0].ended_at is None
    await gw.clock.advance(2 * 60)
    await gw.settle()
    assert [r.end_reason for r in gw.stack.db.db.list_sessions(limit=10)] == ["daily_reset"]


async def test_busy_mode(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    gw = await gateway(make_gateway, chorus_home)
    write_config(chorus_home, sessions={"busy": "interrupt"})
    await reload(gw)
    server.reply("the first answer", delay=30)
    server.reply("the second answer")
    await gw.say("first", user="2")
    await until(lambda: server.in_flight, what="an LLM request in flight")
    await gw.say("second", user="2")
    answers = [(await gw.adapter.pop()).text, (await gw.adapter.pop()).text]
    assert "the first answer" not in answers and "the second answer" in answers


async def test_max_live(make_gateway: GatewayFactory, chorus_home: Path) -> None:
    gw = await gateway(make_gateway, chorus_home)
    write_config(chorus_home, sessions={"max_live": 1})
    await reload(gw)
    await gw.ask("hi", user="2")
    await gw.ask("hi", user="3")
    assert gw.runner.sessions.live_agents == 1
    assert len(gw.runner.sessions.sessions) >= 2


async def test_handoff(make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI) -> None:
    gw = await gateway(make_gateway, chorus_home, memory={"flush_min_turns": 99})
    write_config(chorus_home, memory={"flush_min_turns": 99}, sessions={"handoff": False})
    await reload(gw)
    await gw.ask("we talked about bees", user="2")
    await gw.ask("/new", user="2")
    await gw.settle()
    await gw.ask("hello again", user="2")
    head = HANDOFF_PROMPT.split("{")[0]
    asked = [r for r in server.requests if str(r["messages"][0]["content"]).startswith(head)]
    assert asked == []  # no summary was asked for


async def test_memory_limits_reach_new_sessions(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    gw = await gateway(make_gateway, chorus_home)
    write_config(chorus_home, memory={"user_char_limit": 40})
    await reload(gw)
    server.tool_call(
        "memory", {"action": "add", "target": "user", "content": "Likes long walks by the sea"}
    )
    server.reply("noted")
    await gw.ask("remember me", user="2")
    tool = next(m for m in server.last_request["messages"] if m["role"] == "tool")
    assert "/40" in tool["content"]
    assert "/40 chars" in (await gw.ask("/status", user="2")).text


async def test_nudge_interval_reaches_new_sessions(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    gw = await gateway(make_gateway, chorus_home, memory={"nudge_interval": 0})
    await gw.ask("hello", user="3")
    assert not any(NUDGE in text for text in user_messages(server.last_request))
    write_config(chorus_home, memory={"nudge_interval": 1})
    await reload(gw)
    await gw.ask("hello", user="2")
    assert any(NUDGE in text for text in user_messages(server.last_request))


async def test_shared_writes_apply_to_running_sessions(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    gw = await gateway(make_gateway, chorus_home)
    await gw.ask("hello", user="2")
    write_config(chorus_home, memory={"shared_writes": "admins"})
    await reload(gw)
    server.tool_call("memory", {"action": "add", "target": "memory", "content": "Wifi: Nimbus"})
    server.reply("done")
    await gw.ask("remember the wifi for everyone", user="2")
    tool = next(m for m in server.last_request["messages"] if m["role"] == "tool")
    assert "Only admins" in tool["content"]


async def test_persona_and_max_iterations_reach_new_sessions(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    gw = await gateway(make_gateway, chorus_home)
    write_config(chorus_home, agent={"persona": "You are Quill, a terse librarian."})
    await reload(gw)
    await gw.ask("who are you?", user="2")
    assert "Quill" in server.last_request["messages"][0]["content"]


async def test_flush_min_turns_reaches_the_session_end_job(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    gw = await gateway(make_gateway, chorus_home, memory={"flush_min_turns": 99})
    write_config(chorus_home, memory={"flush_min_turns": 1})
    await reload(gw)
    await gw.ask("I keep bees", user="2")
    await gw.ask("/new", user="2")
    await gw.settle()
    flushes = [
        r
        for r in server.requests
        if [t["function"]["name"] for t in r.get("tools", [])] == ["memory"]
    ]
    assert len(flushes) == 1


async def test_restart_only_keys_are_named_and_kept(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    gw = await gateway(make_gateway, chorus_home)
    write_config(chorus_home, llm={"model": "other-model"}, sessions={"scope": "chat"})
    reply = await reload(gw)
    assert "need a restart" in reply and "llm" in reply and "sessions.scope" in reply
    await gw.ask("hello", user="2")
    assert server.last_request["model"] != "other-model"
    assert gw.runner.settings.sessions.scope == "user"


async def test_replica_settings_are_named_and_kept(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    """The replica's name, lease and orphan wait are read once at start-up."""
    gw = await gateway(make_gateway, chorus_home)
    before = gw.runner.settings.gateway
    write_config(
        chorus_home,
        gateway={"replica_id": "renamed", "lease_seconds": 99.0, "orphan_seconds": 77.0},
    )
    reply = await reload(gw)
    for key in ("gateway.replica_id", "gateway.lease_seconds", "gateway.orphan_seconds"):
        assert key in reply
    after = gw.runner.settings.gateway
    assert (after.replica_id, after.lease_seconds, after.orphan_seconds) == (
        before.replica_id,
        before.lease_seconds,
        before.orphan_seconds,
    )


async def test_every_restart_key_is_named_by_a_reload(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    """A reload that changes every key declared RESTART names each one and keeps them all."""
    gw = await gateway(make_gateway, chorus_home)
    before = gw.runner.settings
    changed = {
        "llm": {"model": "m2", "max_retries": 9, "vision": True},
        "memory": {"provider": "holographic"},
        "sessions": {"scope": "chat", "threads": "merged", "max_concurrent_turns": 3},
        "redis": {"queue_name": "other", "retry_intervals": [1], "job_timeout": 5},
        "database": {"pool_size": 3},
        "gateway": {"http": {"port": 9}, "lease_seconds": 30.0},
        "telegram": {"merge_window_seconds": 2.5},
        "slack": {"socket_ping_interval": 20.0},
        "discord": {"command_guilds": [5]},
    }
    write_config(chorus_home, **changed)
    reply = await reload(gw)
    named = reply.split("need a restart to change:")[1].rstrip(".").split(", ")
    assert sorted(k.strip() for k in named) == sorted(
        [
            "llm.model",
            "llm.max_retries",
            "llm.vision",
            "memory.provider",
            "sessions.scope",
            "sessions.threads",
            "sessions.max_concurrent_turns",
            "redis.queue_name",
            "redis.retry_intervals",
            "redis.job_timeout",
            "database.pool_size",
            "gateway.http.port",
            "gateway.lease_seconds",
            "telegram.merge_window_seconds",
            "slack.socket_ping_interval",
            "discord.command_guilds",
        ]
    )
    assert gw.runner.settings.model_dump() == before.model_dump()


async def test_a_bad_config_changes_nothing(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    gw = await gateway(make_gateway, chorus_home)
    (chorus_home / "config.yaml").write_text("sessions:\n  idle_minutes: lots\n")
    failed = (await gw.ask("/admin reload", user=ADMIN)).text
    assert "nothing changed" in failed and "sessions.idle_minutes" in failed
    assert (await gw.ask("still here", user="2")).text == "ok"

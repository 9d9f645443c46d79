"""A group session several people share (``sessions.scope: chat``): each acts on their own
turns only (/undo, /retry, /stop), and the group's shared profile is changed as shared
memory is (``memory.shared_writes``): /forget and the model's writes to it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.history import replay
from gateway._texts import SENT_PRIVATELY
from memory.paths import ChorusPaths, UserKey
from memory.store import StagedWrites
from tests.fakes import FakeOpenAI
from tests.integration.recorder_plugin import install_recorder, read_log
from tests.runner.conftest import Gateway, GatewayFactory
from tests.waiting import until

ADMIN, A, B = "1", "2", "3"
GROUP: dict[str, Any] = {"chat_id": "g1", "is_direct": False, "mentions_bot": True}
GROUP_PROFILE = UserKey.for_chat("testchat", "g1")


async def group_gateway(make_gateway: GatewayFactory, home: Path, **env: str) -> Gateway:
    home.mkdir(mode=0o700)
    install_recorder(home)
    return await make_gateway(
        CHORUS_SESSIONS__SCOPE="chat", CHORUS_MEMORY__PROVIDER="recorder", **env
    )


PRIVATE_COMMANDS = ("/forget", "/admin", "/memory", "/status", "/whoami")


async def in_group(gw: Gateway, text: str, user: str, answer: str | None = None) -> str:
    """What ``user`` is answered for ``text`` said in the group (a personal command's
    answer comes privately, with a note in the group)."""
    if answer is not None:
        gw.server.reply(answer)
    first = await gw.ask(text, user=user, **GROUP)
    if not text.startswith(PRIVATE_COMMANDS):
        return first.text
    second = await gw.adapter.pop(20)
    private, note = (second, first) if first.chat_id == GROUP["chat_id"] else (first, second)
    assert note.chat_id == GROUP["chat_id"] and note.text == SENT_PRIVATELY, note
    return private.text


async def kept_turns(gw: Gateway) -> list[str]:
    """The group session's user messages not undone, as its transcript holds them."""
    live = next(s for s in gw.runner.sessions.sessions if s.user_key == GROUP_PROFILE)
    stored = [m.to_openai() for m in await gw.stack.db.get_messages(live.session_id)]
    return [m["content"] for m in replay(stored) if m["role"] == "user"]


def withdrawn(home: Path) -> list[dict[str, Any]]:
    """What the provider was told was taken back (/undo, /retry)."""
    return [e for e in read_log(home) if e["hook"] == "on_session_switch" and e["rewound"]]


def group_profile(gw: Gateway) -> str:
    path = ChorusPaths(gw.stack.settings.home).user_file(GROUP_PROFILE)
    return path.read_text(encoding="utf-8") if path.exists() else ""


def last_tool_result(server: FakeOpenAI) -> dict[str, Any]:
    tools = [m for m in server.last_request["messages"] if m["role"] == "tool"]
    return json.loads(tools[-1]["content"])


async def test_undo_takes_back_only_the_askers_own_last_turn(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    gw = await group_gateway(make_gateway, chorus_home)
    await in_group(gw, "A asks first", A, "answer to A")
    assert "no turn here to undo" in await in_group(gw, "/undo", B)
    await gw.settle()
    assert await kept_turns(gw) == ["A asks first"]
    assert withdrawn(chorus_home) == []

    await in_group(gw, "B asks", B, "answer to B")
    await in_group(gw, "A asks again", A, "answer to A again")
    refused = await in_group(gw, "/undo", B)
    assert "someone has spoken since" in refused
    await gw.settle()
    assert await kept_turns(gw) == ["A asks first", "B asks", "A asks again"]
    assert withdrawn(chorus_home) == []

    assert "Undone" in await in_group(gw, "/undo", A)  # A's own last turn
    await gw.settle()
    assert await kept_turns(gw) == ["A asks first", "B asks"]
    taken = [e["withdrawn"]["user_content"] for e in withdrawn(chorus_home) if e["withdrawn"]]
    assert set(taken) <= {"A asks again"}
    assert "Undone" in await in_group(gw, "/undo", B)  # now B's turn is the last one
    await gw.settle()
    assert await kept_turns(gw) == ["A asks first"]


async def test_an_admin_may_undo_anyones_last_turn(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    gw = await group_gateway(make_gateway, chorus_home)
    await in_group(gw, "A asks", A, "answer")
    assert "Undone" in await in_group(gw, "/undo", ADMIN)
    assert await kept_turns(gw) == []


async def test_retry_answers_only_the_askers_own_last_turn(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    gw = await group_gateway(make_gateway, chorus_home)
    await in_group(gw, "A's question", A, "first answer")
    asked = len(server.requests)
    assert "no turn here to retry" in await in_group(gw, "/retry", B)
    assert "no turn here to retry" in await in_group(gw, "/retry", ADMIN)
    await gw.settle()
    assert len(server.requests) == asked
    assert await kept_turns(gw) == ["A's question"]
    assert withdrawn(chorus_home) == []

    assert await in_group(gw, "/retry", A, "second answer") == "second answer"
    assert await kept_turns(gw) == ["A's question"]


async def test_stop_stops_only_the_askers_own_turn(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    gw = await group_gateway(make_gateway, chorus_home)
    server.hang(1.5)
    await gw.say("A's long question", user=A, **GROUP)
    await until(lambda: server.requests, what="A's LLM request")
    refused = await gw.ask("/stop", user=B, **GROUP)
    assert "someone else's message" in refused.text
    answer = await gw.adapter.pop(20)  # A's answer, whole
    assert answer.text == server.default_reply

    server.hang(30)
    server.reply("answer for B")
    await gw.say("A's second question", user=A, **GROUP)
    await until(lambda: len(server.requests) == 2, what="A's second LLM request")
    await gw.say("B waits for an answer too", user=B, **GROUP)
    await gw.say("/stop", user=A, **GROUP)
    replies = {(await gw.adapter.pop(20)).text for _ in range(3)}
    assert "Stopped." in replies and "answer for B" in replies  # B's message still answered


@pytest.mark.parametrize("policy", ["review", "admins"])
async def test_forget_on_the_group_profile_follows_the_shared_policy(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI, policy: str
) -> None:
    gw = await group_gateway(make_gateway, chorus_home, CHORUS_MEMORY__SHARED_WRITES=policy)
    server.tool_call("memory", {"action": "add", "target": "user", "content": "Group: Rust"})
    await in_group(gw, "remember we write Rust", ADMIN, "noted")
    assert "Group: Rust" in group_profile(gw)  # an admin's write lands

    reply = await in_group(gw, "/forget all", B)
    assert "Group: Rust" in group_profile(gw)
    if policy == "admins":
        assert "only admins can change it" in reply
        assert "No writes waiting" in (await gw.ask("/admin memory pending", user=ADMIN)).text
        return
    assert "waits for an admin's review (#1)" in reply
    pending = (await gw.ask("/admin memory pending", user=ADMIN)).text
    assert "#1 remove by testchat:3 in the shared profile of testchat#chat:g1:" in pending
    assert "approved" in (await gw.ask("/admin memory approve 1", user=ADMIN)).text
    assert "Group: Rust" not in group_profile(gw)


async def test_forget_of_one_entry_is_staged_whole(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    gw = await group_gateway(make_gateway, chorus_home)
    server.tool_call("memory", {"action": "add", "target": "user", "content": "Group: Rust"})
    await in_group(gw, "remember Rust", ADMIN, "noted")
    assert "No entry contains 'Go'" in await in_group(gw, "/forget Go", B)
    assert "(#1)" in await in_group(gw, "/forget Rust", B)
    pending = (await gw.ask("/admin memory pending", user=ADMIN)).text
    assert "Group: Rust" in pending


async def test_a_members_write_to_the_group_profile_waits_for_review(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    gw = await group_gateway(make_gateway, chorus_home)
    server.tool_call("memory", {"action": "add", "target": "user", "content": "Group: tabs"})
    await in_group(gw, "remember we use tabs", B, "noted")
    result = last_tool_result(server)
    assert result["success"] is True and result["staged"] is True
    assert result["target"] == "user" and "NOT saved yet" in result["message"]
    assert "tabs" not in group_profile(gw)

    pending = (await gw.ask("/admin memory pending", user=ADMIN)).text
    assert "#1 add by testchat:3 in the shared profile of testchat#chat:g1:" in pending
    assert "approved" in (await gw.ask("/admin memory approve 1", user=ADMIN)).text
    assert "Group: tabs" in group_profile(gw)
    own = ChorusPaths(gw.stack.settings.home).user_file(UserKey("testchat", B))
    assert not own.exists() or "tabs" not in own.read_text(encoding="utf-8")


async def test_under_admins_a_members_write_to_the_group_profile_is_refused(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    gw = await group_gateway(make_gateway, chorus_home, CHORUS_MEMORY__SHARED_WRITES="admins")
    server.tool_call("memory", {"action": "add", "target": "user", "content": "Group: tabs"})
    await in_group(gw, "remember we use tabs", B, "noted")
    result = last_tool_result(server)
    assert result["success"] is False and "Only admins" in result["message"]
    assert "tabs" not in group_profile(gw)


async def test_a_persons_own_profile_is_theirs_to_write(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    gw = await group_gateway(make_gateway, chorus_home)
    server.tool_call("memory", {"action": "add", "target": "user", "content": "Likes tea"})
    server.reply("noted")
    await gw.ask("remember I like tea", user=B)  # a direct message
    own = ChorusPaths(gw.stack.settings.home).user_file(UserKey("testchat", B))
    assert "Likes tea" in own.read_text(encoding="utf-8")
    assert "Forgot 1 entry" in (await gw.ask("/forget all", user=B)).text


async def test_a_members_write_to_memory_md_in_a_group_is_staged_under_their_name(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    gw = await group_gateway(make_gateway, chorus_home)
    server.tool_call("memory", {"action": "add", "target": "memory", "content": "Lunch at 12"})
    await in_group(gw, "remember lunch is at 12", B, "noted")
    pending = (await gw.ask("/admin memory pending", user=ADMIN)).text
    assert "#1 add by testchat:3:" in pending  # the member, not the group's key


def test_the_cli_approves_a_group_profile_write_into_that_profile(chorus_home: Path) -> None:
    chorus_home.mkdir(mode=0o700)
    paths = ChorusPaths(chorus_home)
    staging = StagedWrites(paths.state_db)
    staging.stage(
        user_key="testchat:3",
        session_id="s",
        action="add",
        content="Group: tabs",
        profile=str(GROUP_PROFILE),
    )
    staging.close()
    chorus = Path(sys.executable).with_name("chorus")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
    env["CHORUS_HOME"] = str(chorus_home)

    def run(*args: str) -> str:
        result = subprocess.run(
            [str(chorus), "memory", *args], capture_output=True, text=True, env=env, timeout=60
        )
        assert result.returncode == 0, result.stderr
        return " ".join(line.strip() for line in result.stdout.splitlines())

    assert "#1 add by testchat:3 in the shared profile of testchat#chat:g1:" in run("pending")
    assert "#1 approved" in run("approve", "1")
    assert "Group: tabs" in paths.user_file(GROUP_PROFILE).read_text(encoding="utf-8")
    assert not paths.memory_file.exists() or "tabs" not in paths.memory_file.read_text()


async def test_whose_turn_it_was_is_known_after_the_agent_is_rebuilt(
    make_gateway: GatewayFactory, chorus_home: Path
) -> None:
    gw = await group_gateway(make_gateway, chorus_home, CHORUS_SESSIONS__MAX_LIVE="1")
    await in_group(gw, "A asks", A, "answer")
    await gw.ask("a direct message", user=ADMIN)  # the group's agent is evicted
    group = next(s for s in gw.runner.sessions.sessions if s.user_key == GROUP_PROFILE)
    assert group.agent is None
    assert "no turn here to undo" in await in_group(gw, "/undo", B)
    assert "Undone" in await in_group(gw, "/undo", A)


async def test_the_flush_at_a_group_sessions_end_stages_its_profile_writes(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    gw = await group_gateway(
        make_gateway,
        chorus_home,
        CHORUS_SESSIONS__IDLE_MINUTES="30",
        CHORUS_MEMORY__FLUSH_MIN_TURNS="1",
    )
    await in_group(gw, "we deploy on Fridays", ADMIN, "ok")
    server.tool_call("memory", {"action": "add", "target": "user", "content": "Group: Fridays"})
    server.reply("Short summary.")
    await gw.clock.advance(31 * 60)
    await gw.settle()
    assert "Fridays" not in group_profile(gw)  # nobody in particular wrote it: reviewed
    staging = gw.stack.factory.staging
    assert staging is not None
    assert [(w.content, w.profile) for w in staging.pending()] == [
        ("Group: Fridays", str(GROUP_PROFILE))
    ]

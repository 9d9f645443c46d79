"""``on_memory_write`` carries the seed's metadata, and approved staged writes reach it too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakes import FakeOpenAI
from tests.integration.recorder_plugin import install_recorder, read_log
from tests.plugins.holographic_cases import open_provider, tool
from tests.runner.conftest import Gateway, GatewayFactory


async def recorded_gateway(make_gateway: GatewayFactory, home: Path) -> Gateway:
    home.mkdir(mode=0o700)
    install_recorder(home)
    return await make_gateway(CHORUS_MEMORY__PROVIDER="recorder")


def writes(home: Path) -> list[dict[str, Any]]:
    return [e for e in read_log(home) if e["hook"] == "on_memory_write"]


async def test_a_replace_reaches_the_provider_with_its_old_text_and_speaker(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    gw = await recorded_gateway(make_gateway, chorus_home)
    server.tool_call("memory", {"action": "add", "target": "user", "content": "Lives in Lyon"})
    server.reply("noted")
    await gw.ask("I live in Lyon", user="2")
    change = {"action": "replace", "target": "user", "old_text": "Lyon", "content": "Lives in Nice"}
    server.tool_call("memory", change)
    server.reply("updated")
    await gw.ask("I moved to Nice", user="2")
    server.tool_call("memory", {"action": "remove", "target": "user", "old_text": "Nice"})
    server.reply("forgotten")
    await gw.ask("forget where I live", user="2")

    sid = next(s.session_id for s in gw.runner.sessions.sessions)
    added, replaced, removed = writes(chorus_home)
    assert (added["action"], added["content"]) == ("add", "Lives in Lyon")
    assert "old_text" not in added["metadata"]
    assert (replaced["action"], replaced["content"]) == ("replace", "Lives in Nice")
    assert replaced["metadata"] == {
        "old_text": "Lyon",
        "speaker": "testchat:2",
        "target": "user",
        "agent_context": "primary",
        "origin": "tool",
        "session_id": sid,
    }
    assert (removed["action"], removed["content"]) == ("remove", "Nice")
    assert removed["metadata"]["old_text"] == "Nice"


async def test_an_approved_staged_write_reaches_the_provider(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    gw = await recorded_gateway(make_gateway, chorus_home)
    server.tool_call("memory", {"action": "add", "target": "memory", "content": "Lunch at one"})
    server.reply("I'll ask an admin")
    await gw.ask("lunch is at one for everyone", user="2")
    await gw.settle()
    assert writes(chorus_home) == []  # staged: nothing has changed yet

    assert "approved" in (await gw.ask("/admin memory approve 1", user="1")).text
    await gw.settle()
    sid = next(s.session_id for s in gw.runner.sessions.sessions if s.key.user_id == "2")
    [approved] = writes(chorus_home)
    assert (approved["action"], approved["target"], approved["content"]) == (
        "add",
        "memory",
        "Lunch at one",
    )
    assert approved["session"] == sid and approved["context"] == "background"
    assert approved["metadata"]["origin"] == "review"
    assert approved["metadata"]["speaker"] == "testchat:2"

    await gw.ask("/admin memory approve 1", user="1")  # no longer pending: told once
    await gw.settle()
    assert len(writes(chorus_home)) == 1


async def test_holographic_follows_a_replace_of_the_built_in_memory(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    """The tool's ``old_text`` is a part of the entry: the old fact goes, the new one stays."""
    chorus_home.mkdir(mode=0o700)
    gw = await make_gateway(CHORUS_MEMORY__PROVIDER="holographic")
    server.tool_call("memory", {"action": "add", "target": "user", "content": "Lives in Lyon."})
    server.reply("noted")
    await gw.ask("I live in Lyon", user="2")
    change = {"action": "replace", "target": "user", "old_text": "Lyon", "content": "Lives in Nice."}
    server.tool_call("memory", change)
    server.reply("updated")
    await gw.ask("I moved to Nice", user="2")
    await gw.settle()

    provider = open_provider(chorus_home, "testchat:2")
    try:
        facts = tool(provider, action="list", limit=50)["facts"]
    finally:
        provider.shutdown()
    mirrored = [f["content"] for f in facts if f["category"] == "user"]
    assert mirrored == ["Lives in Nice."]

"""``on_memory_write`` carries the seed's metadata, and approved staged writes reach it too."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from memory.paths import ChorusPaths
from memory.store import StagedWrites
from memory.transcripts import SessionDB
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
    assert approved["session"] == sid and approved["context"] == "flush"
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
    change = {"action": "replace", "target": "user", "old_text": "Lyon"}
    server.tool_call("memory", {**change, "content": "Lives in Nice."})
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


def test_a_write_approved_with_the_cli_reaches_the_provider(chorus_home: Path) -> None:
    chorus_home.mkdir(mode=0o700)
    install_recorder(chorus_home)
    state = ChorusPaths(chorus_home).state_db
    sessions = SessionDB(state)
    sessions.create_session("s-cli", platform="telegram", user_key="telegram:5", started_at=1.0)
    sessions.close()
    staging = StagedWrites(state)
    staged = staging.stage(
        user_key="telegram:5", session_id="s-cli", action="add", content="Wifi: Nimbus"
    )
    staging.close()
    chorus = Path(sys.executable).with_name("chorus")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
    env.update(CHORUS_HOME=str(chorus_home), CHORUS_MEMORY__PROVIDER="recorder")
    result = subprocess.run(
        [str(chorus), "memory", "approve", str(staged)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "approved" in result.stdout
    [approved] = writes(chorus_home)
    assert (approved["action"], approved["content"], approved["session"]) == (
        "add",
        "Wifi: Nimbus",
        "s-cli",
    )
    assert approved["metadata"]["origin"] == "review" and approved["context"] == "flush"
    assert approved["metadata"]["speaker"] == "telegram:5"

"""A new session of a conversation names the session it follows: in its row (found as
its agent opens it) and, with an external memory provider, to the provider as it is
made and before its first turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakes import FakeOpenAI
from tests.integration.recorder_plugin import install_recorder, read_log
from tests.runner.conftest import GatewayFactory


def sessions_of(gw: Any, user_key: str) -> list[Any]:
    """The user's sessions, oldest first."""
    return list(reversed(gw.stack.db.db.list_sessions(user_key=user_key, limit=100)))


async def test_after_new_the_next_session_follows_the_one_it_ended(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway()
    server.reply("hello")
    assert (await gw.ask("hi", user="2")).text == "hello"
    await gw.ask("hi", user="3")  # another person's session is no parent of it
    await gw.ask("/new", user="2")
    server.reply("again")
    assert (await gw.ask("me again", user="2")).text == "again"
    await gw.settle()

    first, second = sessions_of(gw, "testchat:2")
    assert first.end_reason == "new" and second.ended_at is None
    assert first.parent_session_id is None
    assert second.parent_session_id == first.id
    [other] = sessions_of(gw, "testchat:3")
    assert other.parent_session_id is None


async def test_an_external_provider_hears_the_parent_as_the_session_is_made(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path
) -> None:
    chorus_home.mkdir(mode=0o700)
    install_recorder(chorus_home)
    gw = await make_gateway(CHORUS_MEMORY__PROVIDER="recorder")
    await gw.ask("hi", user="2")
    await gw.ask("/new", user="2")
    await gw.ask("me again", user="2")
    await gw.settle()

    first, second = sessions_of(gw, "testchat:2")
    assert second.parent_session_id == first.id
    log = [e for e in read_log(chorus_home) if e.get("context") == "primary"]
    made = [e for e in log if e["hook"] == "initialize"]
    assert [e["kwargs"]["parent_session_id"] for e in made] == ["None", first.id]
    switches = [e for e in log if e["hook"] == "on_session_switch"]
    assert [(e["new"], e["parent"], e["reset"], e["reason"]) for e in switches] == [
        (second.id, first.id, True, "new")
    ]
    hooks = [e["hook"] for e in log if e.get("session") == second.id]
    assert hooks.index("on_session_switch") < hooks.index("on_turn_start")

"""Recalled memory reaches only the request of the turn it was made for, and a group's
recall is the group's own: one member's private memory never reaches the others, not
through the automatic recall nor through a provider tool the model calls in the group.

A full gateway (testchat platform, the local holographic provider, fake LLM): what
the model was sent is read off the fake LLM server's requests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memory.providers import provider_dir
from plugins.memory.holographic import HolographicProvider
from tests.fakes import FakeOpenAI
from tests.runner.conftest import GatewayFactory, user_messages

FENCE = "<memory-context>"
PIN_FACT = "Alice bank pin is MANGO77"


def sent(request: dict[str, Any]) -> str:
    return json.dumps(request["messages"], ensure_ascii=False)


def remember_in_chat_store(home: Path, chat_key: str, fact: str) -> None:
    """A fact in a chat's own holographic store, as the provider keeps it."""
    provider = HolographicProvider()
    provider.initialize("seed", chorus_home=str(home), user_key=chat_key, platform="testchat")
    provider.handle_tool_call("fact_store", {"action": "add", "content": fact})
    provider.shutdown()
    assert (provider_dir(home, "holographic", chat_key) / "facts.db").exists()


async def test_a_members_private_memory_never_reaches_the_group(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path
) -> None:
    gw = await make_gateway(CHORUS_SESSIONS__SCOPE="chat", CHORUS_MEMORY__PROVIDER="holographic")
    server.tool_call("fact_store", {"action": "add", "content": PIN_FACT})
    server.reply("Saved.")
    await gw.ask("please keep my bank pin in your fact store", user="2")  # Alice's DM
    server.reply("I see it, Alice.")
    await gw.ask("what is my bank pin?", user="2")
    assert "MANGO77" in sent(server.last_request)  # her own recall, in her own DM

    group = {"chat_id": "group-1", "mentions_bot": True}
    server.reply("I can't tell.")
    await gw.ask("@bot what is my bank pin?", user="2", **group)
    alice_asks = server.last_request
    server.reply("Hello!")
    await gw.ask("@bot hello", user="3", **group)  # Bob
    bob_says_hello = server.last_request

    assert "MANGO77" not in sent(bob_says_hello)
    assert "MANGO77" not in sent(alice_asks)  # the group's recall is not her private store
    assert user_messages(bob_says_hello) == ["@bot what is my bank pin?", "@bot hello"]


def tool_results(request: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in request["messages"] if m.get("role") == "tool"]


def last_tool_result(request: dict[str, Any]) -> str:
    """What the tool called in this turn answered (the request's last tool message)."""
    return tool_results(request)[-1]


async def test_a_provider_tool_in_the_group_never_searches_a_members_private_store(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path
) -> None:
    gw = await make_gateway(CHORUS_SESSIONS__SCOPE="chat", CHORUS_MEMORY__PROVIDER="holographic")
    server.tool_call("fact_store", {"action": "add", "content": PIN_FACT})
    server.reply("Saved.")
    await gw.ask("please keep my bank pin in your fact store", user="2")  # Alice's DM
    server.tool_call("fact_store", {"action": "search", "query": "bank pin"})
    server.reply("It is in your notes.")
    await gw.ask("look it up in your fact store", user="2")
    assert "MANGO77" in last_tool_result(server.last_request)  # hers, in her own DM

    group = {"chat_id": "group-1", "mentions_bot": True}
    server.tool_call("fact_store", {"action": "search", "query": "bank pin"})
    server.reply("I can't find it.")
    await gw.ask("@bot look up my bank pin in your fact store", user="2", **group)
    after_alices_search = server.last_request
    server.reply("Hello!")
    await gw.ask("@bot hello", user="3", **group)  # Bob
    bob_says_hello = server.last_request

    assert '"success": true' in last_tool_result(after_alices_search)  # ran, in the group's store
    assert "MANGO77" not in sent(after_alices_search)
    assert "MANGO77" not in sent(bob_says_hello)


async def test_a_provider_tool_write_in_the_group_lands_in_the_groups_own_store(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path
) -> None:
    gw = await make_gateway(CHORUS_SESSIONS__SCOPE="chat", CHORUS_MEMORY__PROVIDER="holographic")
    group = {"chat_id": "group-1", "mentions_bot": True}
    server.tool_call("fact_store", {"action": "add", "content": "The team meets at the harbour"})
    server.reply("Noted for the group.")
    await gw.ask("@bot note where we meet, as I said before", user="2", **group)  # Alice
    server.tool_call("fact_store", {"action": "search", "query": "team meets"})
    server.reply("At the harbour.")
    await gw.ask("@bot where do we meet?", user="3", **group)  # Bob finds it
    assert "harbour" in last_tool_result(server.last_request)

    server.tool_call("fact_store", {"action": "search", "query": "team meets"})
    server.reply("Nothing here.")
    await gw.ask("where does the team meet?", user="2")  # Alice's own DM
    assert "harbour" not in last_tool_result(server.last_request)
    assert (provider_dir(chorus_home, "holographic", "testchat#chat:group-1") / "facts.db").exists()


async def test_a_group_recalls_its_own_memory_for_the_turn_that_asked(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path
) -> None:
    chorus_home.mkdir(mode=0o700, exist_ok=True)
    remember_in_chat_store(chorus_home, "testchat#chat:group-1", "The team meets at the harbour")
    gw = await make_gateway(CHORUS_SESSIONS__SCOPE="chat", CHORUS_MEMORY__PROVIDER="holographic")
    group = {"chat_id": "group-1", "mentions_bot": True}
    server.reply("At the harbour.")
    await gw.ask("@bot where does the team meet?", user="2", **group)
    assert "harbour" in user_messages(server.last_request)[-1]
    server.reply("Hi.")
    await gw.ask("@bot hello", user="3", **group)
    assert FENCE not in sent(server.last_request)
    assert user_messages(server.last_request) == ["@bot where does the team meet?", "@bot hello"]


async def test_a_turns_recall_is_not_replayed_in_the_next_turns(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway(CHORUS_MEMORY__PROVIDER="holographic")
    server.tool_call("fact_store", {"action": "add", "content": PIN_FACT})
    server.reply("Saved.")
    await gw.ask("please keep my bank pin in your fact store")
    server.tool_call("fact_store", {"action": "search", "query": "bank pin"})
    server.reply("It is in your notes.")
    await gw.ask("what is my bank pin?")
    asked = server.requests[-2:]
    for request in asked:  # every call of the turn's tool loop carries the recall
        last = user_messages(request)[-1]
        assert last.startswith("what is my bank pin?") and FENCE in last and "MANGO77" in last
    server.reply("You're welcome.")
    await gw.ask("thanks")
    later = server.last_request
    assert FENCE not in sent(later)
    assert user_messages(later) == [
        "please keep my bank pin in your fact store",
        "what is my bank pin?",
        "thanks",
    ]
    # what came before this turn's message is sent as the turn before sent it
    before = len(asked[0]["messages"]) - 1
    assert later["messages"][:before] == asked[0]["messages"][:before]

"""Per-user isolation of the holographic provider: nobody's facts reach anybody else.

Two people in their own sessions, and one group chat whose session holds the
chat's shared key while each turn names its ``speaker``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plugins.memory.holographic import HolographicProvider
from tests.plugins.holographic_cases import open_provider, tool

ALICE = "telegram:1"
BOB = "telegram:2"
CHAT = "telegram#chat:-100"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def opened(home: Path) -> Iterator[dict[str, HolographicProvider]]:
    providers = {key: open_provider(home, key) for key in (ALICE, BOB, CHAT)}
    yield providers
    for provider in providers.values():
        provider.shutdown()


def everything(provider: HolographicProvider, speaker: str | None = None) -> str:
    """All one provider can say about the facts, through every reading path, as one text."""
    extra: dict[str, Any] = {} if speaker is None else {"speaker": speaker}
    parts = [
        provider.prefetch("sushi olives Lisbon Berlin", speaker=speaker),
        json.dumps(tool(provider, action="list", limit=50, **extra)),
        json.dumps(tool(provider, action="search", query="sushi olives Lisbon Berlin", **extra)),
        json.dumps(tool(provider, action="probe", entity="Lisbon", **extra)),
        json.dumps(tool(provider, action="probe", entity="Berlin", **extra)),
        json.dumps(tool(provider, action="reason", entities=["Lisbon", "Berlin"], **extra)),
        json.dumps(tool(provider, action="contradict", **extra)),
    ]
    return "\n".join(parts)


def test_two_users_never_see_each_other(opened: dict[str, HolographicProvider]) -> None:
    alice, bob = opened[ALICE], opened[BOB]
    tool(alice, action="add", content="I love sushi and I moved to Lisbon.")
    alice.sync_turn("I prefer window seats.", "ok")
    tool(bob, action="add", content="I hate olives and I live in Berlin.")
    bob.on_session_end([{"role": "user", "content": "I prefer aisle seats."}])
    seen_by_alice, seen_by_bob = everything(alice), everything(bob)
    assert "sushi" in seen_by_alice and "window" in seen_by_alice
    assert "olives" not in seen_by_alice and "aisle" not in seen_by_alice
    assert "olives" in seen_by_bob and "aisle" in seen_by_bob
    assert "sushi" not in seen_by_bob and "window" not in seen_by_bob
    assert "sushi" not in bob.prefetch("where does the sushi lover live")


def test_ids_are_per_user(opened: dict[str, HolographicProvider]) -> None:
    alice, bob = opened[ALICE], opened[BOB]
    alice_id = tool(alice, action="add", content="Alice's locker code is 4411.")["fact_id"]
    bob_id = tool(bob, action="add", content="Bob's locker code is 9090.")["fact_id"]
    assert alice_id == bob_id == 1  # same number, different stores
    tool(bob, action="remove", fact_id=1)
    assert (
        json.loads(bob.handle_tool_call("fact_feedback", {"fact_id": 1, "helpful": False}))[
            "success"
        ]
        is False
    )
    assert [f["content"] for f in tool(alice, action="list")["facts"]] == [
        "Alice's locker code is 4411."
    ]
    assert tool(alice, action="list")["facts"][0]["trust"] == 0.5


def test_speakers_in_a_group_chat_keep_their_own_facts(
    opened: dict[str, HolographicProvider], home: Path
) -> None:
    chat = opened[CHAT]
    tool(chat, action="add", content="I love sushi and Lisbon.", speaker=ALICE)
    chat.sync_turn("I prefer window seats.", "ok", speaker=ALICE)
    tool(chat, action="add", content="I hate olives and Berlin.", speaker=BOB)
    chat.sync_turn("I prefer aisle seats.", "ok", speaker=BOB)
    chat.on_turn_start(3, "hello", speaker=BOB)
    tool(chat, action="add", content="The group meets in Berlin every Sunday.")

    as_alice, as_bob, as_chat = (
        everything(chat, ALICE),
        everything(chat, BOB),
        everything(chat),
    )
    assert "sushi" in as_alice and "window" in as_alice
    assert not any(w in as_alice for w in ("olives", "aisle", "group meets"))
    assert "olives" in as_bob and "aisle" in as_bob
    assert not any(w in as_bob for w in ("sushi", "window", "group meets"))
    assert "group meets" in as_chat
    assert not any(w in as_chat for w in ("sushi", "window", "olives", "aisle"))

    providers = home / "providers" / "holographic"
    assert (providers / "users" / "telegram" / "1" / "facts.db").is_file()
    assert (providers / "users" / "telegram" / "2" / "facts.db").is_file()
    assert (providers / "chats" / "telegram" / "-100" / "facts.db").is_file()


def test_a_speaker_meets_their_group_facts_in_their_own_session(
    opened: dict[str, HolographicProvider],
) -> None:
    opened[CHAT].sync_turn("I love sushi and Lisbon.", "ok", speaker=ALICE)  # her group turn
    assert "sushi" in opened[ALICE].prefetch("do I like sushi")
    assert opened[BOB].prefetch("do I like sushi") == ""


def test_a_bad_speaker_fails_closed(opened: dict[str, HolographicProvider]) -> None:
    chat = opened[CHAT]
    tool(chat, action="add", content="The group meets in Berlin every Sunday.")
    for speaker in ("not a key", "nocolon"):
        result = tool(chat, action="list", speaker=speaker)
        assert result["success"] is False
        with pytest.raises(ValueError):
            chat.prefetch("Berlin group", speaker=speaker)
        with pytest.raises(ValueError):
            chat.sync_turn("I love Berlin.", "ok", speaker=speaker)
    assert [f["content"] for f in tool(chat, action="list")["facts"]] == [
        "The group meets in Berlin every Sunday."
    ]


def test_session_end_routes_by_message_speaker(opened: dict[str, HolographicProvider]) -> None:
    chat = opened[CHAT]
    chat.on_session_end(
        [
            {"role": "user", "content": "I love sushi.", "speaker": ALICE},
            {"role": "user", "content": "I hate olives.", "speaker": BOB},
            {"role": "user", "content": "We decided to meet on Sundays."},
        ]
    )
    assert [f["content"] for f in tool(chat, action="list", speaker=ALICE)["facts"]] == [
        "I love sushi."
    ]
    assert [f["content"] for f in tool(chat, action="list", speaker=BOB)["facts"]] == [
        "I hate olives."
    ]
    assert [f["content"] for f in tool(chat, action="list")["facts"]] == [
        "We decided to meet on Sundays."
    ]

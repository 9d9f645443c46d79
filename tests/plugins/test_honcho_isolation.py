"""Honcho keeps people apart, refuses a wrong key, and pauses after repeated failures."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from plugins.memory.honcho import HonchoProvider
from plugins.memory.honcho._config import ASSISTANT_PEER
from tests.fakes.honcho_server import FakeHoncho
from tests.plugins.test_honcho import ALICE, ALICE_PEER, call, open_provider

BOB = "telegram:2"
BOB_PEER = "telegram_3a2"
CHAT = "telegram#chat:-100"
SECRET = "My bank PIN is 4242 and I bank in Berlin."


@pytest.fixture
def fake() -> Iterator[FakeHoncho]:
    with FakeHoncho() as server:
        yield server


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_two_people_never_see_each_other(home: Path, fake: FakeHoncho) -> None:
    alice = open_provider(home, fake)
    bob = open_provider(home, fake, user_key=BOB, session="s2")
    bob.sync_turn(SECRET, "Noted.")
    alice.sync_turn("I bank in Lisbon with a small bank.", "Noted.")
    fake.set_card(BOB_PEER, ["PIN 4242"])
    assert "4242" not in alice.prefetch("my bank PIN and where I bank")
    for name, args in (
        ("honcho_search", {"query": "bank PIN Berlin", "limit": 20}),
        ("honcho_reasoning", {"query": "what is my bank PIN in Berlin?"}),
        ("honcho_context", {"query": "bank PIN Berlin"}),
        ("honcho_profile", {}),
    ):
        assert "4242" not in json.dumps(call(alice, name, **args)), name
    bob_fact = call(bob, "honcho_search", query="bank PIN Berlin")["results"][0]["id"]
    refused = call(alice, "honcho_conclude", delete_id=bob_fact)
    assert refused["success"] is False and "no conclusion" in refused["error"]
    assert SECRET in fake.conclusions_of(BOB_PEER)


def test_in_a_group_session_each_speaker_is_their_own_peer(home: Path, fake: FakeHoncho) -> None:
    room = open_provider(home, fake, user_key=CHAT, session="room")
    room.sync_turn("I keep bees in the garden.", "Nice.", speaker=ALICE)
    room.sync_turn("I keep three cats at home.", "Lovely.", speaker=BOB)
    assert fake.messages_of("room") == [
        (ALICE_PEER, "I keep bees in the garden."),
        (ASSISTANT_PEER, "Nice."),
        (BOB_PEER, "I keep three cats at home."),
        (ASSISTANT_PEER, "Lovely."),
    ]
    assert fake.conclusions_of(BOB_PEER) == ["I keep three cats at home."]
    assert "bees" in room.prefetch("what do I keep in the garden", speaker=ALICE)
    assert "bees" not in room.prefetch("what do I keep in the garden", speaker=BOB)
    found = call(room, "honcho_search", BOB, query="what animals do I keep")
    assert [r["conclusion"] for r in found["results"]] == ["I keep three cats at home."]
    made = call(room, "honcho_conclude", BOB, conclusion="Bob is allergic to bee stings.")
    assert "Bob is allergic to bee stings." in fake.conclusions_of(BOB_PEER)
    refused = call(room, "honcho_conclude", ALICE, delete_id=made["id"])
    assert refused["success"] is False
    snapshot = call(room, "honcho_context", BOB)
    assert [m["from"] for m in snapshot["recent_messages"]] == [
        ALICE,
        "assistant",
        "user",
        "assistant",
    ]
    bad = call(room, "honcho_search", "not a key", query="bees")
    assert bad == {"success": False, "error": "speaker must be a user key such as telegram:12345"}


def test_a_leaky_server_still_shows_only_your_conclusions(home: Path, fake: FakeHoncho) -> None:
    alice = open_provider(home, fake)
    bob = open_provider(home, fake, user_key=BOB, session="s2")
    bob.sync_turn(SECRET, "Noted.")
    alice.sync_turn("I bank in Lisbon with a small bank.", "Noted.")
    fake.leaky = True  # the server forgets to filter by peer
    found = call(alice, "honcho_search", query="bank PIN Berlin", limit=20)
    assert found["success"] and found["count"] == 1
    texts = json.dumps([{k: v for k, v in r.items() if k != "id"} for r in found["results"]])
    assert "4242" not in texts  # Bob's PIN (ids are random hex: look past them)


def test_a_wrong_api_key_is_refused_and_never_shown(home: Path, fake: FakeHoncho) -> None:
    provider = open_provider(home, fake, context="primary", api_key="wrong-key")
    result = call(provider, "honcho_search", query="anything at all")
    assert result == {
        "success": False,
        "error": "honcho_search could not run: Honcho failed (AuthenticationError 401)",
    }
    assert provider.prefetch("anything at all") == ""
    assert fake.requests == []  # the fake refuses before it records
    keyed = open_provider(home, fake, context="primary")
    assert call(keyed, "honcho_search", query="anything at all")["success"] is True


def test_a_server_without_auth_gets_no_key(home: Path) -> None:
    with FakeHoncho(api_key=None) as open_server:
        provider = open_provider(home, open_server, api_key="")
        provider.sync_turn("I like green tea a lot.", "Noted.")
        assert open_server.conclusions_of(ALICE_PEER) == ["I like green tea a lot."]


def test_repeated_failures_pause_honcho_until_the_cooldown(
    home: Path, fake: FakeHoncho, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    provider = HonchoProvider(
        clock=clock,
        failure_threshold=3,
        cooldown=60,
        environ={"HONCHO_API_KEY": fake.api_key or ""},
    )
    provider.initialize(
        "s1",
        chorus_home=home,
        platform="telegram",
        user_key=ALICE,
        agent_context="primary",
        config={"base_url": fake.base_url},
    )
    fake.fail(503, times=3)
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            failed = call(provider, "honcho_search", query="green tea")
            assert failed["error"] == "honcho_search could not run: Honcho failed (ServerError 503)"
    assert provider.breaker.is_open
    assert "pausing Honcho for 60 s" in caplog.text and "green tea" not in caplog.text
    sent = len(fake.requests)
    paused = call(provider, "honcho_search", query="green tea")
    assert paused["success"] is False and "paused after 3 failures" in paused["error"]
    assert provider.prefetch("green tea") == ""
    assert len(fake.requests) == sent  # nothing reached the server while paused
    clock.now += 61
    assert call(provider, "honcho_search", query="green tea")["success"] is True
    assert provider.breaker.failures == 0


def test_a_refused_request_does_not_count_against_honcho(home: Path, fake: FakeHoncho) -> None:
    provider = open_provider(home, fake, context="primary")
    fake.fail(422, times=5)
    for _ in range(5):
        assert call(provider, "honcho_search", query="green tea")["success"] is False
    assert provider.breaker.failures == 0 and not provider.breaker.is_open


def test_no_message_text_reaches_info_logs(
    home: Path, fake: FakeHoncho, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(logging.getLogger("httpx"), "level", logging.NOTSET)
    with caplog.at_level(logging.INFO):
        provider = open_provider(home, fake, context="primary")
        provider.prefetch("my zebrafinch is called Pip")
        call(provider, "honcho_search", query="zebrafinch")
        provider.sync_turn("My zebrafinch sings at dawn.", "Lovely zebrafinch.")
        fake.fail(503, times=1)
        call(provider, "honcho_reasoning", query="what about my zebrafinch?")
    assert fake.paths()[-1].endswith("/chat")
    assert caplog.records and "zebrafinch" not in caplog.text

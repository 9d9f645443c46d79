"""The Hindsight provider through the real hindsight-client against FakeHindsight."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plugins.memory import discover_memory_providers, load_memory_provider, resolve_config
from plugins.memory.hindsight import HindsightProvider
from plugins.memory.hindsight._buffer import DB_FILE
from plugins.memory.hindsight._config import bank_id, parse, user_key_of
from tests.fakes.hindsight_server import FakeHindsight

ALICE = "telegram:1"
ALICE_BANK = "chorus-telegram_3a1"


@pytest.fixture
def fake() -> Iterator[FakeHindsight]:
    with FakeHindsight() as server:
        yield server


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def open_provider(
    home: Path,
    fake: FakeHindsight,
    user_key: str = ALICE,
    context: str = "background",
    session: str = "s1",
    api_key: str | None = None,
    **config: Any,
) -> HindsightProvider:
    key = fake.api_key if api_key is None else api_key
    provider = HindsightProvider(environ={"HINDSIGHT_API_KEY": key or ""})
    provider.initialize(
        session,
        chorus_home=home,
        platform="telegram",
        user_key=user_key,
        agent_context=context,
        config={"base_url": fake.base_url, **config},
    )
    return provider


def call(provider: HindsightProvider, name: str, speaker: str | None = None, **args: Any) -> Any:
    extra = {} if speaker is None else {"speaker": speaker}
    return json.loads(provider.handle_tool_call(name, args, **extra))


@pytest.fixture
def alice(home: Path, fake: FakeHindsight) -> Iterator[HindsightProvider]:
    provider = open_provider(home, fake)
    yield provider
    provider.shutdown()


def test_listed_as_bundled_available_and_loadable(home: Path) -> None:
    info = {i.name: i for i in discover_memory_providers(home)}["hindsight"]
    assert (info.source, info.available, info.error) == ("bundled", True, None)
    assert "Hindsight" in info.description
    assert load_memory_provider("hindsight", home).name == "hindsight"


def test_bank_ids_are_injective_and_safe() -> None:
    keys = ["telegram:1", "telegram_3a1:x", "slack#chat:C2", "discord:a_b", "telegram:ü:1"]
    banks = [bank_id("chorus", k) for k in keys]
    assert len(set(banks)) == len(keys)
    assert banks[0] == ALICE_BANK
    assert all(
        set(b) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
        for b in banks
    )
    assert [user_key_of("chorus", b) for b in banks] == keys


def test_settings_defaults_environment_and_strict_prefix() -> None:
    settings = parse({}, {})
    assert (settings.base_url, settings.bank_prefix, settings.api_key) == (
        "http://localhost:8888",
        "chorus",
        "",
    )
    env = {"HINDSIGHT_API_KEY": "k", "HINDSIGHT_BASE_URL": "http://h:1/"}
    settings = parse({"timeout": "x", "recall_budget": "huge", "buffer_turns": 3}, env)
    assert (settings.api_key, settings.base_url, settings.timeout) == ("k", "http://h:1", 30.0)
    assert (settings.recall_budget, settings.buffer_turns) == ("mid", 3)
    with pytest.raises(ValueError, match="bank_prefix"):
        parse({"bank_prefix": "no spaces"}, {})


def test_the_chorus_config_resolver_accepts_the_schema() -> None:
    provider = HindsightProvider()
    resolved = resolve_config(provider, {"bank_prefix": "team"}, {"HINDSIGHT_API_KEY": "k"})
    assert resolved["api_key"] == "k" and resolved["bank_prefix"] == "team"
    assert parse(resolved, {}).bank_id(ALICE) == "team-telegram_3a1"
    secret = next(f for f in provider.get_config_schema() if f["key"] == "api_key")
    assert secret["secret"] is True and secret["env_var"] == "HINDSIGHT_API_KEY"


def test_initialize_does_not_touch_the_network(
    alice: HindsightProvider, fake: FakeHindsight
) -> None:
    assert fake.requests == []


def test_sync_turn_buffers_on_disk_and_session_end_retains_one_document(
    alice: HindsightProvider, fake: FakeHindsight, home: Path
) -> None:
    alice.sync_turn("I love dark roast coffee.", "Noted!")
    alice.sync_turn("My sister Anna lives in Lisbon.", "Lovely city.")
    alice.sync_turn("My sister Anna lives in Lisbon.", "Lovely city.")  # re-delivered job
    assert fake.calls("retain") == []
    db = home / "providers" / "hindsight" / "users" / "telegram" / "1" / DB_FILE
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT user_text FROM turns ORDER BY seq").fetchall()
    assert rows == [("I love dark roast coffee.",), ("My sister Anna lives in Lisbon.",)]

    alice.on_session_end([])
    [(bank, body)] = fake.calls("retain")
    [item] = body["items"]
    assert bank == ALICE_BANK and item["document_id"] == "chorus-s1-1"
    assert item["content"] == (
        "User: I love dark roast coffee.\nAssistant: Noted!\n"
        "User: My sister Anna lives in Lisbon.\nAssistant: Lovely city."
    )
    assert item["metadata"] == {"source": "chorus", "session_id": "s1"}
    assert body["async"] is False  # answered once the facts are stored: a failure keeps them
    assert fake.facts(ALICE_BANK) == [
        "I love dark roast coffee.",
        "My sister Anna lives in Lisbon.",
    ]
    alice.on_session_end([])  # nothing left to retain
    assert len(fake.calls("retain")) == 1


def test_a_long_session_is_retained_in_parts(home: Path, fake: FakeHindsight) -> None:
    provider = open_provider(home, fake, buffer_turns=2)
    for i in range(5):
        provider.sync_turn(f"Fact number {i} is true.", "ok")
    retained = [body["items"][0] for _, body in fake.calls("retain")]
    assert [r["document_id"] for r in retained] == ["chorus-s1-1", "chorus-s1-2"]
    provider.on_session_end([])
    docs = [body["items"][0] for _, body in fake.calls("retain")]
    assert [d["document_id"] for d in docs][-1] == "chorus-s1-3"
    assert [f"Fact number {i} is true." for i in range(5)] == fake.facts(ALICE_BANK)


def test_a_new_instance_finds_the_turns_a_killed_one_buffered(
    home: Path, fake: FakeHindsight
) -> None:
    doomed = open_provider(home, fake)
    doomed.sync_turn("I keep bees in the garden.", "Nice.")
    del doomed  # no shutdown, as when a worker is killed
    successor = open_provider(home, fake)
    successor.sync_turn("I grow tomatoes too.", "Great.")
    successor.on_session_end([])
    [(_, body)] = fake.calls("retain")
    assert body["items"][0]["content"].splitlines()[::2] == [
        "User: I keep bees in the garden.",
        "User: I grow tomatoes too.",
    ]


def test_flush_context_stays_passive(home: Path, fake: FakeHindsight) -> None:
    provider = open_provider(home, fake, context="flush")
    provider.sync_turn("I keep bees in the garden.", "Nice.")
    provider.on_session_end([])
    assert fake.calls("retain") == []


def test_recall_on_the_next_session(home: Path, fake: FakeHindsight) -> None:
    first = open_provider(home, fake)
    first.sync_turn("My sister Anna lives in Lisbon.", "Nice.")
    first.on_session_end([])
    first.queue_prefetch("where does Anna live")
    _, recall = fake.calls("recall")[-1]
    assert (recall["budget"], recall["max_tokens"]) == ("mid", 1024)
    gateway = open_provider(home, fake, context="primary", session="s2")
    recalled = gateway.prefetch("where does my sister Anna live")
    assert recalled.startswith("- My sister Anna lives in Lisbon. (")
    assert gateway.prefetch("   ") == ""
    fake.stop()  # now only the warm recall of queue_prefetch is left
    assert gateway.prefetch("where does my sister Anna live").startswith("- My sister Anna")


def test_undo_takes_a_turn_back_out(alice: HindsightProvider, fake: FakeHindsight) -> None:
    alice.sync_turn("I keep three cats.", "Lovely.")
    alice.sync_turn("I hate all cats.", "Oh.")
    withdrawn = {"turn": 2, "user_content": "I hate all cats.", "assistant_content": "Oh."}
    alice.on_session_switch("s1", rewound=True, reason="undo", withdrawn_turn=withdrawn)
    alice.on_session_end([])
    assert fake.facts(ALICE_BANK) == ["I keep three cats."]
    alice.sync_turn("I also keep two dogs.", "Nice.")
    alice.on_session_end([])
    withdrawn = {"turn": 3, "user_content": "I also keep two dogs.", "assistant_content": "Nice."}
    alice.sync_turn("I keep a parrot.", "Ok.")
    alice.on_session_switch("s1", rewound=True, reason="undo", withdrawn_turn=withdrawn)
    alice.on_session_end([])
    assert "I also keep two dogs." not in fake.facts(ALICE_BANK)
    assert "I keep a parrot." in fake.facts(ALICE_BANK)


def test_tool_schemas() -> None:
    names = [s["name"] for s in HindsightProvider().get_tool_schemas()]
    assert names == ["hindsight_retain", "hindsight_recall", "hindsight_reflect"]


def test_every_tool(alice: HindsightProvider, fake: FakeHindsight) -> None:
    stored = call(alice, "hindsight_retain", content="My dog Biscuit is a beagle.")
    assert stored == {"success": True, "stored": True, "items": 1}
    _, body = fake.calls("retain")[-1]
    assert body["items"][0]["content"] == "My dog Biscuit is a beagle."
    assert body["async"] is True  # the turn does not wait for the extraction
    found = call(alice, "hindsight_recall", query="what breed is Biscuit", budget="low")
    assert found["success"] and found["count"] == 1
    assert found["results"][0]["text"] == "My dog Biscuit is a beagle."
    assert fake.calls("recall")[-1][1]["budget"] == "low"
    answer = call(alice, "hindsight_reflect", query="tell me about my dog Biscuit")
    assert answer == {
        "success": True,
        "answer": "From what I remember: My dog Biscuit is a beagle.",
    }
    assert fake.calls("reflect")[-1][1]["budget"] == "low"
    assert call(alice, "hindsight_recall", query="unrelated quantum") == {
        "success": True,
        "results": [],
        "count": 0,
    }


@pytest.mark.parametrize(
    ("name", "args", "error"),
    [
        ("hindsight_retain", {}, "content must be a string"),
        ("hindsight_retain", {"content": "  "}, "content must not be empty"),
        ("hindsight_recall", {"query": 3}, "query must be a string"),
        ("hindsight_recall", {"query": "x", "budget": "max"}, "budget must be one of"),
        ("hindsight_recall", {"query": "x", "max_tokens": 1}, "max_tokens must be"),
        ("hindsight_nope", {"query": "x"}, "unknown tool"),
    ],
)
def test_bad_input_is_a_json_error(
    alice: HindsightProvider, fake: FakeHindsight, name: str, args: dict[str, Any], error: str
) -> None:
    result = call(alice, name, **args)
    assert result["success"] is False and error in result["error"]
    assert fake.requests == []


def test_a_wrong_api_key_is_refused_by_the_server_and_is_a_json_error(
    home: Path, fake: FakeHindsight
) -> None:
    provider = open_provider(home, fake, api_key="wrong")
    result = call(provider, "hindsight_recall", query="anything at all")
    assert result["success"] is False and "UnauthorizedException 401" in result["error"]
    assert fake.unauthorised == 1 and "wrong" not in result["error"]
    keyed = open_provider(home, fake)
    assert call(keyed, "hindsight_recall", query="anything at all")["success"] is True


def test_a_server_without_auth_gets_no_header(home: Path) -> None:
    with FakeHindsight(api_key=None) as open_server:
        provider = open_provider(home, open_server, api_key="")
        assert call(provider, "hindsight_retain", content="I like tea a lot.")["success"]
        assert open_server.facts(ALICE_BANK) == ["I like tea a lot."]


def test_calls_before_initialize_and_after_shutdown(home: Path, fake: FakeHindsight) -> None:
    provider = HindsightProvider()
    assert "not ready" in call(provider, "hindsight_recall", query="x")["error"]
    provider = open_provider(home, fake)
    provider.shutdown()
    provider.shutdown()
    assert "not ready" in call(provider, "hindsight_recall", query="x")["error"]

"""Honcho's cost throttles, its dialectic supplement and its silence in the flush.

The real honcho-ai SDK against FakeHoncho; each test counts what the server saw.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plugins.memory.honcho import HonchoProvider
from plugins.memory.honcho._config import parse
from tests.fakes.honcho_server import FakeHoncho

ALICE = "telegram:1"
ALICE_PEER = "telegram_3a1"
CONTEXT = ("GET", f"/v3/workspaces/chorus/peers/{ALICE_PEER}/context")
CHAT = ("POST", f"/v3/workspaces/chorus/peers/{ALICE_PEER}/chat")


@pytest.fixture
def fake() -> Iterator[FakeHoncho]:
    with FakeHoncho() as server:
        yield server


def open_provider(
    home: Path, fake: FakeHoncho, context: str = "primary", **config: Any
) -> HonchoProvider:
    provider = HonchoProvider(environ={"HONCHO_API_KEY": fake.api_key or ""})
    provider.initialize(
        "s1",
        chorus_home=home,
        platform="telegram",
        user_key=ALICE,
        agent_context=context,
        config={"base_url": fake.base_url, **config},
    )
    return provider


@pytest.fixture
def seeded(tmp_path: Path, fake: FakeHoncho) -> Path:
    home = tmp_path / "home"
    writer = open_provider(home, fake, context="background")
    writer.sync_turn("My sister Anna lives in Lisbon.", "Nice.")
    writer.shutdown()
    fake.requests.clear()
    return home


def turns(provider: HonchoProvider, fake: FakeHoncho, count: int) -> list[tuple[int, int, str]]:
    """Per turn: the context calls, the dialectic calls and the recall injected."""
    seen = []
    for turn in range(1, count + 1):
        fake.requests.clear()
        provider.on_turn_start(turn, "where does Anna live")
        recalled = provider.prefetch("where does Anna live")
        calls = [(m, p) for m, p, _ in fake.requests]
        seen.append((calls.count(CONTEXT), calls.count(CHAT), recalled))
    return seen


def test_by_default_every_turn_asks_for_context_and_a_dialectic_supplement(
    seeded: Path, fake: FakeHoncho
) -> None:
    provider = open_provider(seeded, fake)
    seen = turns(provider, fake, 3)
    assert [(c, d) for c, d, _ in seen] == [(1, 1), (1, 1), (1, 1)]
    recalled = seen[0][2]
    assert "Anna lives in Lisbon" in recalled
    assert recalled.count("Anna lives in Lisbon") == 2  # the context and Honcho's answer
    assert "Honcho on this message:\nMy sister Anna lives in Lisbon." in recalled


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"context_cadence": 2}, [(1, 1), (0, 1), (1, 1), (0, 1), (1, 1)]),
        ({"dialectic_cadence": 3}, [(1, 1), (1, 0), (1, 0), (1, 1), (1, 0)]),
        (
            {"context_cadence": "3", "dialectic_cadence": 2},
            [(1, 1), (0, 0), (0, 1), (1, 0), (0, 1)],
        ),
        ({"injection_frequency": "first-turn"}, [(1, 1), (0, 0), (0, 0), (0, 0), (0, 0)]),
    ],
)
def test_cadences_and_injection_frequency_limit_the_calls_per_turn(
    seeded: Path, fake: FakeHoncho, config: dict[str, Any], expected: list[tuple[int, int]]
) -> None:
    provider = open_provider(seeded, fake, **config)
    seen = turns(provider, fake, 5)
    assert [(c, d) for c, d, _ in seen] == expected
    recalls = [recalled for _, _, recalled in seen]
    if config.get("injection_frequency") == "first-turn":
        assert "Anna lives in Lisbon" in recalls[0] and recalls[1:] == ["", "", "", ""]
    else:  # between two context calls the last context is injected again
        assert all("Anna lives in Lisbon" in recalled for recalled in recalls)


def test_the_background_warm_up_follows_the_context_cadence(seeded: Path, fake: FakeHoncho) -> None:
    worker = open_provider(seeded, fake, context="background", context_cadence=2)
    counts = []
    for _ in range(4):
        fake.requests.clear()
        worker.queue_prefetch("where does Anna live")
        counts.append([(m, p) for m, p, _ in fake.requests].count(CONTEXT))
    assert counts == [1, 0, 1, 0]
    fake.requests.clear()
    open_provider(seeded, fake, context="background", injection_frequency="first-turn")
    worker = open_provider(seeded, fake, context="background", injection_frequency="first-turn")
    worker.queue_prefetch("where does Anna live")
    assert fake.requests == []


def test_the_reasoning_level_cap_lowers_every_dialectic_question(
    seeded: Path, fake: FakeHoncho
) -> None:
    provider = open_provider(seeded, fake, reasoning_level_cap="minimal")
    provider.on_turn_start(1, "where does Anna live")
    provider.prefetch("where does Anna live")
    provider.handle_tool_call("honcho_reasoning", {"query": "Anna?", "reasoning_level": "high"})
    levels = [body.get("reasoning_level") for m, p, body in fake.requests if (m, p) == CHAT]
    assert levels == ["minimal", "minimal"]
    fake.requests.clear()
    mid = open_provider(seeded, fake, reasoning_level_cap="mid")
    mid.handle_tool_call("honcho_reasoning", {"query": "Anna?", "reasoning_level": "max"})
    mid.handle_tool_call("honcho_reasoning", {"query": "Anna?", "reasoning_level": "low"})
    levels = [body.get("reasoning_level") for m, p, body in fake.requests if (m, p) == CHAT]
    assert levels == ["medium", "low"]


def test_throttle_settings_have_the_seed_defaults_and_are_strict() -> None:
    settings = parse({}, {})
    assert (
        settings.injection_frequency,
        settings.context_cadence,
        settings.dialectic_cadence,
        settings.reasoning_level_cap,
    ) == ("every-turn", 1, 1, None)
    for bad in (
        {"injection_frequency": "sometimes"},
        {"context_cadence": 0},
        {"dialectic_cadence": "often"},
        {"dialectic_cadence": True},
        {"reasoning_level_cap": "extreme"},
    ):
        key = next(iter(bad))
        with pytest.raises(ValueError, match=rf"memory\.providers\.honcho\.{key}"):
            parse(bad, {})


def test_the_flush_is_silent_its_user_writes_are_no_conclusions(
    seeded: Path, fake: FakeHoncho
) -> None:
    flush = open_provider(seeded, fake, context="flush")
    flush.on_memory_write("add", "user", "Prefers answers in French", {"origin": "flush"})
    assert flush.get_tool_schemas() == [] and flush.system_prompt_block() == ""
    assert flush.prefetch("anything") == ""
    flush.queue_prefetch("anything")
    primary = open_provider(seeded, fake)
    primary.on_memory_write(
        "add", "user", "Likes tea", {"origin": "flush", "agent_context": "flush"}
    )
    assert fake.requests == []
    before = fake.conclusions_of(ALICE_PEER)
    assert "Likes tea" not in before and "Prefers answers in French" not in before
    primary.on_memory_write("add", "user", "Likes tea", {"origin": "tool"})
    assert fake.conclusions_of(ALICE_PEER) == [*before, "Likes tea"]

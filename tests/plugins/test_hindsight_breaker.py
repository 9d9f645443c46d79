"""Hindsight down: errors, a stopped server, a server that hangs; the breaker opens and closes."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plugins.memory.hindsight import HindsightProvider
from plugins.memory.hindsight._guard import BackendFailed
from tests.fakes.hindsight_server import FakeHindsight
from tests.plugins.test_hindsight import ALICE, ALICE_BANK

SECRET = "my passport number is X1234567"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def fake() -> Iterator[FakeHindsight]:
    with FakeHindsight() as server:
        yield server


@pytest.fixture
def clock() -> Clock:
    return Clock()


def open_provider(
    tmp_path: Path, fake: FakeHindsight, clock: Clock, context: str = "primary", **config: Any
) -> HindsightProvider:
    provider = HindsightProvider(
        clock=clock, cooldown=60.0, environ={"HINDSIGHT_API_KEY": str(fake.api_key)}
    )
    provider.initialize(
        "s1",
        chorus_home=tmp_path / "home",
        platform="telegram",
        user_key=ALICE,
        agent_context=context,
        config={"base_url": fake.base_url, **config},
    )
    return provider


def recall(provider: HindsightProvider) -> dict[str, Any]:
    result = json.loads(provider.handle_tool_call("hindsight_recall", {"query": "passport"}))
    assert isinstance(result, dict)
    return result


def test_five_errors_pause_hindsight_and_the_cooldown_resumes_it(
    tmp_path: Path, fake: FakeHindsight, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    provider = open_provider(tmp_path, fake, clock)
    fake.fail(500, times=5)
    with caplog.at_level(logging.DEBUG, logger="plugins.memory.hindsight"):
        for _ in range(5):
            result = recall(provider)
            assert result["success"] is False and "ServiceException 500" in result["error"]
    assert provider.breaker.is_open
    assert "pausing hindsight for 60 s" in caplog.text
    sent = len(fake.requests)
    paused = recall(provider)
    assert paused["success"] is False and "paused after 5 failures" in paused["error"]
    assert provider.prefetch("my passport") == ""
    assert len(fake.requests) == sent  # nothing reached the server while paused
    clock.now += 61
    assert recall(provider)["success"] is True
    assert not provider.breaker.is_open and provider.breaker.failures == 0


def test_a_failure_after_the_cooldown_pauses_again(
    tmp_path: Path, fake: FakeHindsight, clock: Clock
) -> None:
    provider = open_provider(tmp_path, fake, clock)
    fake.fail(503, times=6)
    for _ in range(5):
        recall(provider)
    clock.now += 61
    assert "ServiceException 503" in recall(provider)["error"]
    assert provider.breaker.is_open


def test_a_stopped_server_costs_the_turn_nothing_and_the_turns_wait_on_disk(
    tmp_path: Path, clock: Clock
) -> None:
    fake = FakeHindsight().start()
    worker = open_provider(tmp_path, fake, clock, context="background")
    worker.sync_turn("I keep bees in the garden.", "Nice.")
    worker.queue_prefetch("what do I keep in the garden")  # warm recall: nothing yet
    fake.stop()
    gateway = open_provider(tmp_path, fake, clock)
    for _ in range(5):
        assert gateway.prefetch("what do I keep in the garden") == ""
        assert recall(gateway)["success"] is False
    assert gateway.breaker.is_open
    with pytest.raises(BackendFailed):
        worker.on_session_end([])
    for _ in range(4):
        with pytest.raises(BackendFailed):
            worker.queue_prefetch("garden")
    assert worker.breaker.is_open
    worker.on_session_end([])  # paused: no call and no error, the turn stays on disk
    worker.queue_prefetch("garden")

    with FakeHindsight() as revived:
        later = open_provider(tmp_path, revived, clock, context="background")
        later.on_session_end([])
        assert revived.facts(ALICE_BANK) == ["I keep bees in the garden."]


def test_a_server_that_hangs_is_cut_off_by_the_timeout(
    tmp_path: Path, fake: FakeHindsight, clock: Clock
) -> None:
    provider = open_provider(tmp_path, fake, clock, timeout=0.3, recall_timeout=0.2)
    fake.delay = 5.0
    result = recall(provider)
    assert result["success"] is False and "Timeout" in result["error"]
    assert provider.prefetch("my passport") == ""
    assert provider.breaker.failures == 2


def test_errors_never_carry_memory_text_above_debug(
    tmp_path: Path, fake: FakeHindsight, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    provider = open_provider(tmp_path, fake, clock, context="background")
    fake.fail(500, times=1)
    with caplog.at_level(logging.INFO):
        provider.sync_turn(SECRET, "Noted.", speaker=None)
        with pytest.raises(BackendFailed):
            provider.on_session_end([])
        provider.on_session_end([])
    assert SECRET not in caplog.text and "X1234567" not in caplog.text
    assert fake.facts(ALICE_BANK) == ["my passport number is X1234567"]

"""The mem0 circuit breaker: five failures in a row pause mem0, the cooldown resumes it."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plugins.memory._breaker import CircuitBreaker
from plugins.memory.mem0 import Mem0Provider
from tests.fakes import FakeOpenAI
from tests.fakes.mem0_platform import FakeMem0Platform, mem0_responder
from tests.plugins.test_mem0 import open_provider

SECRET = "my passport number is X1234567"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def search(provider: Mem0Provider, query: str = "passport number") -> dict[str, Any]:
    result = json.loads(provider.handle_tool_call("mem0_search", {"query": query}))
    assert isinstance(result, dict)
    return result


def test_breaker_states() -> None:
    clock = Clock()
    breaker = CircuitBreaker(threshold=3, cooldown=10, clock=clock)
    assert breaker.allow() and not breaker.is_open
    assert [breaker.failure() for _ in range(3)] == [False, False, True]
    assert breaker.is_open and breaker.retry_in() == 10
    clock.now += 9.5
    assert not breaker.allow()
    clock.now += 0.5
    assert breaker.allow()  # half-open: one more try
    assert breaker.failure() is True and not breaker.allow()  # failed again: reopened
    clock.now += 10
    assert breaker.success() is True and breaker.failures == 0 and breaker.allow()
    assert breaker.success() is False
    with pytest.raises(ValueError):
        CircuitBreaker(threshold=0)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def provider(tmp_path: Path, server: FakeOpenAI, clock: Clock) -> Iterator[Mem0Provider]:
    server.responder(mem0_responder)
    opened = open_provider(tmp_path / "home", server, context="primary", clock=clock)
    yield opened
    opened.shutdown()


def test_opens_after_five_failures_and_closes_after_the_cooldown(
    provider: Mem0Provider, server: FakeOpenAI, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    provider.sync_turn(f"Remember that {SECRET}.", "Noted.")
    caplog.set_level(logging.WARNING)
    server.embedding_error(500, times=1000)
    for _ in range(4):
        failed = search(provider, SECRET)
        assert failed["success"] is False and "backend failed" in failed["error"]
        assert not provider.breaker.is_open
    assert provider.prefetch(SECRET) == ""  # the fifth failure
    assert provider.breaker.is_open
    calls = len(server.embedding_requests)
    paused = search(provider, SECRET)
    assert paused["success"] is False and "paused" in paused["error"]
    assert provider.prefetch(SECRET) == ""
    added = json.loads(provider.handle_tool_call("mem0_add", {"content": "I like tea."}))
    assert added["success"] is False and "paused" in added["error"]
    assert len(server.embedding_requests) == calls  # nothing reached the backend
    assert "pausing mem0 for 60 s" in caplog.text
    assert "X1234567" not in caplog.text and "passport" not in caplog.text

    server.clear_embedding_errors()
    clock.now += 59
    assert search(provider)["success"] is False
    clock.now += 1
    resumed = search(provider)
    assert resumed["success"] is True and "X1234567" in resumed["results"][0]["memory"]
    assert not provider.breaker.is_open and provider.breaker.failures == 0
    assert "X1234567" in provider.prefetch("passport number")


def test_a_failure_after_the_cooldown_pauses_again(
    provider: Mem0Provider, server: FakeOpenAI, clock: Clock
) -> None:
    server.embedding_error(500, times=1000)
    for _ in range(5):
        search(provider)
    clock.now += 60
    assert "backend failed" in search(provider)["error"]  # tried, failed
    assert "paused" in search(provider)["error"]


def test_a_success_resets_the_count(provider: Mem0Provider, server: FakeOpenAI) -> None:
    server.embedding_error(500, times=8)  # each failed call uses two attempts (one retry)
    for _ in range(4):
        search(provider)
    assert provider.breaker.failures == 4
    assert search(provider)["success"] is True
    assert provider.breaker.failures == 0


def test_sync_turn_raises_while_paused(provider: Mem0Provider, server: FakeOpenAI) -> None:
    server.embedding_error(500, times=1000)
    for _ in range(5):
        search(provider)
    requests, embeddings = len(server.requests), len(server.embedding_requests)
    with pytest.raises(RuntimeError, match="paused"):
        provider.sync_turn("I like tea.", "Noted.")
    provider.queue_prefetch("tea")  # only warms a cache: skipped quietly
    assert (len(server.requests), len(server.embedding_requests)) == (requests, embeddings)


def test_mem0_lines_quoting_memory_text_are_demoted(
    provider: Mem0Provider, caplog: pytest.LogCaptureFixture
) -> None:
    mem0_main = logging.getLogger("mem0.memory.main")
    assert logging.getLogger("mem0").level == logging.WARNING
    with caplog.at_level(logging.WARNING):
        mem0_main.warning(f"Entity upsert failed for '{SECRET}': boom")
        mem0_main.warning("Batch entity linking failed: boom")
    assert SECRET not in caplog.text and "Batch entity linking failed" in caplog.text


def test_a_dead_platform_opens_the_breaker(tmp_path: Path, clock: Clock) -> None:
    with FakeMem0Platform() as platform:
        host = platform.host
    provider = Mem0Provider(clock=clock)  # the platform is gone: connections are refused
    provider.initialize(
        "s",
        chorus_home=tmp_path / "home",
        platform="telegram",
        user_key="telegram:1",
        agent_context="primary",
        config={"mode": "platform", "api_key": "m0-test-key", "host": host},
    )
    try:
        for _ in range(5):
            assert "backend failed" in search(provider)["error"]
        assert "paused" in search(provider)["error"]
        assert provider.prefetch("anything") == ""
    finally:
        provider.shutdown()

"""A connection to the LLM endpoint opened ahead of a turn: the real openai client and
its HTTP client against the fake endpoint, which tells which TCP connection each
request came on."""

from __future__ import annotations

import logging
import socket

import pytest

from agent.llm import LLMClient
from agent.llm_warm import IDLE_AFTER
from agent.settings import LLMSettings
from tests.fakes import FakeOpenAI


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def client_of(base_url: str, clock: Clock) -> LLMClient:
    settings = LLMSettings(base_url=base_url, api_key="test", model="m", max_retries=0)
    return LLMClient(settings, now=clock)


async def test_the_first_request_after_a_quiet_spell_finds_its_connection_open(
    server: FakeOpenAI,
) -> None:
    clock = Clock()
    llm = client_of(server.base_url, clock)
    try:
        llm.preconnect.warm()
        await llm.preconnect.settled()
        assert [(method, path) for method, path, _, _ in server.unknown] == [("GET", "/v1/")]
        opened = server.unknown[0][2]
        answer = await llm.complete([{"role": "user", "content": "hi"}])
        assert answer.content == "ok"
        assert server.connections == [opened]  # the chat request came on that connection

        clock.now += IDLE_AFTER - 0.5  # a request went out lately: its connection is kept
        llm.preconnect.warm()
        await llm.preconnect.settled()
        assert len(server.unknown) == 1 and llm.preconnect.sent == 1

        clock.now += IDLE_AFTER  # quiet since: opened ahead again, once for many turns
        for _ in range(5):
            llm.preconnect.warm()
        await llm.preconnect.settled()
        assert len(server.unknown) == 2 and llm.preconnect.sent == 2
    finally:
        await llm.aclose()


async def test_an_endpoint_that_cannot_be_reached_is_only_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm = client_of(f"http://127.0.0.1:{port}/v1", Clock())
    try:
        with caplog.at_level(logging.DEBUG, logger="agent.llm_warm"):
            llm.preconnect.warm()
            await llm.preconnect.settled()
        assert "no connection opened ahead to the LLM endpoint (APIConnectionError)" in caplog.text
    finally:
        await llm.aclose()

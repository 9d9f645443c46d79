"""The gateway opens its connection to the LLM endpoint as it starts (the client's
first-request work done there) and again as it admits a person's message after a
quiet spell, for people it answers only."""

from __future__ import annotations

from agent.llm_warm import IDLE_AFTER
from tests.fakes import FakeOpenAI
from tests.runner.conftest import GatewayFactory
from tests.waiting import until


def warmed(server: FakeOpenAI) -> list[tuple[str, str]]:
    return [(method, path) for method, path, _, _ in server.unknown]


async def test_the_connection_opens_at_start_and_when_a_turn_comes_but_not_for_a_stranger(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gateway = await make_gateway(CHORUS_AUTH__POLICY="allowlist")
    await until(lambda: warmed(server) == [("GET", "/v1/")], what="the connection at start")
    await gateway.clock.advance(IDLE_AFTER + 1)  # a quiet spell: the pool's is gone
    refused = await gateway.ask("hello?", user="99")  # a stranger: no turn
    assert "private" in refused.text
    await gateway.settle()
    assert len(server.unknown) == 1 and server.requests == []

    reply = await gateway.ask("hi", user="2")
    assert reply.text == "ok"
    assert warmed(server) == [("GET", "/v1/")] * 2
    assert len(server.requests) == 1

    assert (await gateway.ask("and again", user="3")).text == "ok"  # a request went out lately
    assert len(server.unknown) == 2 and len(server.requests) == 2

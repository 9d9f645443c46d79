"""The gateway opens its connection to the LLM endpoint as it hands a message to its
session, for people it answers only."""

from __future__ import annotations

from tests.fakes import FakeOpenAI
from tests.runner.conftest import GatewayFactory


async def test_a_turn_coming_opens_the_connection_and_a_stranger_opens_none(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gateway = await make_gateway(CHORUS_AUTH__POLICY="allowlist")
    refused = await gateway.ask("hello?", user="99")  # a stranger: no turn
    assert "private" in refused.text
    await gateway.settle()
    assert server.unknown == [] and server.requests == []

    reply = await gateway.ask("hi", user="2")
    assert reply.text == "ok"
    assert [(method, path) for method, path, _, _ in server.unknown] == [("GET", "/v1/")]
    assert len(server.requests) == 1

    assert (await gateway.ask("and again", user="3")).text == "ok"  # a request went out lately
    assert len(server.unknown) == 1 and len(server.requests) == 2

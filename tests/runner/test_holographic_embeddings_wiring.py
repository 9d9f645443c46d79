"""A live gateway hands its LLM endpoint's ``/v1/embeddings`` to the holographic provider."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes import FakeOpenAI
from tests.runner.conftest import GatewayFactory

pytest.importorskip("numpy")


async def test_facts_are_embedded_at_add_time_and_a_synonym_question_recalls_them(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    server.synonyms = {"boss": "manager"}
    gw = await make_gateway(
        CHORUS_MEMORY__PROVIDER="holographic", CHORUS_MEMORY__PREFETCH_TIMEOUT="10"
    )
    server.tool_call("fact_store", {"action": "add", "content": "My manager is called Priya."})
    server.reply("noted")
    await gw.ask("remember my manager is Priya")
    await gw.settle()
    embedded = [t for body in server.embedding_requests for t in body["input"]]
    assert "My manager is called Priya." in embedded  # with the same endpoint and key

    server.reply("Priya")
    await gw.ask("who is my boss")
    sent = json.dumps(server.requests[-1]["messages"])
    assert "My manager is called Priya." in sent  # recalled: no shared word, but the embedding


async def test_off_keeps_the_endpoint_out_of_it_and_auto_catches_up(
    make_gateway: GatewayFactory, chorus_home: Path, server: FakeOpenAI
) -> None:
    chorus_home.mkdir(mode=0o700)
    # a bare YAML off is a boolean: it must still mean "off"
    config = (
        "memory:\n  provider: holographic\n  providers:\n    holographic:\n      embeddings: {}\n"
    )
    (chorus_home / "config.yaml").write_text(config.format("off"))
    gw = await make_gateway()
    server.tool_call("fact_store", {"action": "add", "content": "My manager is called Priya."})
    server.reply("noted")
    await gw.ask("remember my manager is Priya")
    await gw.settle()
    assert server.embedding_calls == 0
    assert "fact_id" in json.dumps(server.requests[-1]["messages"])  # stored by the provider
    await gw.runner.shutdown(5)
    await gw.stack.close()

    (chorus_home / "config.yaml").write_text(config.format("auto"))
    gw = await make_gateway()
    server.tool_call("fact_store", {"action": "add", "content": "Priya sits on the fourth floor."})
    server.reply("noted")
    await gw.ask("Priya moved upstairs")
    await gw.settle()
    embedded = [t for body in server.embedding_requests for t in body["input"]]
    # the new fact, and the one stored while embeddings were off
    assert {"My manager is called Priya.", "Priya sits on the fourth floor."} <= set(embedded)

"""Holographic's embeddings signal against the fake OpenAI ``/v1/embeddings`` (real client).

The fake's vectors are a bag of words in which the test declares which words
mean the same (``synonyms``), so a synonym question shares no word with its
fact for the lexical signals and the same words for the embeddings.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.llm import LLMEmbeddings
from agent.settings import LLMSettings
from plugins.memory.holographic import HolographicProvider
from tests.fakes.openai_server import FakeOpenAI
from tests.plugins.holographic_cases import FACTS, load_facts, open_provider, tool

pytest.importorskip("numpy")

SYNONYMS = {"boss": "manager", "movie": "film", "love": "favourite", "most": "favourite"}
SYNONYM_QUESTIONS = [
    ("who is my boss", "manager"),
    ("which movie do I love most", "film"),
]


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        fake.synonyms = dict(SYNONYMS)
        yield fake


def embedder(server: FakeOpenAI) -> LLMEmbeddings:
    return LLMEmbeddings(LLMSettings(base_url=server.base_url, api_key="sk-test"))


def with_embeddings(home: Path, server: FakeOpenAI, **config: str) -> HolographicProvider:
    provider = HolographicProvider()
    provider.initialize(
        "session-1",
        chorus_home=home,
        platform="telegram",
        user_key="telegram:1",
        agent_context="primary",
        config={"embeddings": "auto", **config},
        embedder=embedder(server),
    )
    return provider


def first(provider: HolographicProvider, ids: dict[int, str], query: str) -> str:
    found = tool(provider, action="search", query=query, limit=5)["facts"]
    return ids[found[0]["id"]] if found else ""


def stored_embeddings(home: Path) -> list[bytes | None]:
    path = home / "providers" / "holographic" / "users" / "telegram" / "1" / "facts.db"
    with sqlite3.connect(path) as db:
        return [r[0] for r in db.execute("SELECT embedding FROM facts ORDER BY id")]


def test_a_synonym_question_the_plain_ranking_misses_is_found_with_embeddings(
    tmp_path: Path, server: FakeOpenAI
) -> None:
    plain = open_provider(tmp_path / "plain")
    plain_ids = load_facts(plain)
    missed = [q for q, wanted in SYNONYM_QUESTIONS if first(plain, plain_ids, q) != wanted]
    assert missed == [q for q, _ in SYNONYM_QUESTIONS]  # no shared word: the lexical signals miss
    plain.shutdown()

    provider = with_embeddings(tmp_path / "home", server)
    assert provider.embeddings_active
    ids = load_facts(provider)
    # computed at add time, with the fact: one request per added fact
    assert all(stored_embeddings(tmp_path / "home"))
    embedded = [t for body in server.embedding_requests for t in body["input"]]
    assert set(FACTS.values()) <= set(embedded)
    for question, wanted in SYNONYM_QUESTIONS:
        assert first(provider, ids, question) == wanted, question
    recalled = provider.prefetch("who is my boss")
    assert recalled.splitlines()[0] == f"- {FACTS['manager']}"
    provider.shutdown()


def test_auto_probes_once_and_falls_back_quietly_without_embeddings(
    tmp_path: Path, server: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    server.offers_embeddings = False  # /v1/embeddings is 404, as on an endpoint without it
    caplog.set_level(logging.INFO)
    provider = with_embeddings(tmp_path / "home", server)
    ids = load_facts(provider)
    assert len(ids) == len(FACTS)  # every fact stored
    assert not provider.embeddings_active
    assert first(provider, ids, "where does my sister live") == "sister"
    assert provider.prefetch("when does my passport expire").startswith(f"- {FACTS['passport']}")
    assert server.embedding_calls == 1  # probed once
    ours = [r for r in caplog.records if not r.name.startswith("httpx")]
    lines = [r for r in ours if "embeddings" in r.getMessage()]
    assert [r.levelname for r in lines] == ["INFO"]
    assert stored_embeddings(tmp_path / "home") == [None] * len(FACTS)
    provider.shutdown()


def test_off_never_calls_the_endpoint(tmp_path: Path, server: FakeOpenAI) -> None:
    provider = with_embeddings(tmp_path / "home", server, embeddings="off")
    ids = load_facts(provider)
    assert not provider.embeddings_active
    assert first(provider, ids, "who is my boss") != "manager"
    assert server.embedding_requests == []
    provider.shutdown()


def test_a_failing_endpoint_loses_no_fact_and_recall_goes_on(
    tmp_path: Path, server: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    provider = with_embeddings(tmp_path / "home", server)
    server.embedding_error(500, times=2)  # the client's one retry fails too
    added = tool(provider, action="add", content="My brother Tom lives in Berlin.")
    assert added["success"] is True and added["created"] is True
    assert stored_embeddings(tmp_path / "home") == [None]
    found = tool(provider, action="search", query="where does Tom live")["facts"]
    assert [f["content"] for f in found] == ["My brother Tom lives in Berlin."]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("HTTP 500" in w for w in warnings)
    assert not any("Berlin" in r.getMessage() for r in caplog.records)
    assert provider.embeddings_active  # a failure is not "unsupported": it is asked again later
    provider.shutdown()


def test_another_embedding_model_re_embeds_the_stored_facts(
    tmp_path: Path, server: FakeOpenAI
) -> None:
    home = tmp_path / "home"
    first_model = with_embeddings(home, server)
    ids = load_facts(first_model)
    first_model.shutdown()
    assert {len(e or b"") for e in stored_embeddings(home)} == {1536 * 4}

    server.embedding_dimensions = 64  # a smaller model
    provider = with_embeddings(home, server, embedding_model="small-embedder")
    added = tool(provider, action="add", content="The printer is on the second floor.")
    ids[added["fact_id"]] = "printer"
    sizes = [len(e or b"") for e in stored_embeddings(home)]
    assert sizes.count(64 * 4) == 1 + 32  # the new fact, then a batch of the others
    tool(provider, action="add", content="The scanner is next to the printer.")
    assert {len(e or b"") for e in stored_embeddings(home)} == {64 * 4}
    assert first(provider, ids, "who is my boss") == "manager"
    provider.shutdown()

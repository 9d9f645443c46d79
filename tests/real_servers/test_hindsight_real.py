"""The Hindsight provider against the real Hindsight server (hindsight-api 1.1 on pg0).

The fake (tests/fakes/hindsight_server.py) answers what chorus's tests expect;
here a real ``hindsight-api`` decides whether the routes, payloads and API key
chorus sends are right, extracts facts from a session chorus retains (with a
fake model, :class:`~tests.real_servers.hindsight_server.HindsightLLM`),
stores them in PostgreSQL with pgvector and ranks them for recall and
reflect. Everything is driven through :class:`HindsightProvider` as the
gateway and the workers drive it.

One server for the module (it takes 10-20 s to start). Retain is
asynchronous, chorus's default: Hindsight's worker extracts the facts after the
call returns, so a test waits for them to appear in the bank. Each test uses
people of its own, since the banks outlive a test. The last test stops the
server, and starts it again.

Not exercised: what a real model extracts or answers (the fake one is
deterministic), observations (its consolidation answers "nothing durable"), a
cross-encoder reranker (``rrf`` here) and an extraction that fails on the
server after an asynchronous retain was accepted (chorus cannot see that).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memory.providers import MemoryManager
from plugins.memory.hindsight import HindsightProvider
from plugins.memory.hindsight._config import bank_id
from plugins.memory.hindsight._guard import BackendFailed
from tests.fakes.openai_server import FakeOpenAI
from tests.plugins.linked_people import link
from tests.real_servers.conftest import real_server_bin
from tests.real_servers.hindsight_server import HindsightLLM, HindsightServer

pytestmark = pytest.mark.real_server

WAIT = 30.0
"""Seconds a retained session may take to become facts (Hindsight's worker polls every 0.5 s)."""


@pytest.fixture(scope="module")
def model() -> HindsightLLM:
    return HindsightLLM()


@pytest.fixture(scope="module")
def llm(model: HindsightLLM) -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        fake.responder(model)
        yield fake


@pytest.fixture(scope="module")
def hindsight(llm: FakeOpenAI) -> Iterator[HindsightServer]:
    server = HindsightServer(real_server_bin("hindsight", "hindsight-api"), llm)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def open_provider(
    home: Path,
    server: HindsightServer,
    user_key: str,
    context: str = "background",
    session: str = "s1",
    api_key: str | None = None,
    **config: Any,
) -> HindsightProvider:
    """A provider as the gateway (``primary``) or a worker (``background``) builds it."""
    key = server.api_key if api_key is None else api_key
    provider = HindsightProvider(environ={"HINDSIGHT_API_KEY": key})
    provider.initialize(
        session,
        chorus_home=home,
        platform="telegram",
        user_key=user_key,
        agent_context=context,
        config={"base_url": server.base_url, **config},
    )
    return provider


def call(provider: HindsightProvider, name: str, speaker: str | None = None, **args: Any) -> Any:
    extra = {} if speaker is None else {"speaker": speaker}
    return json.loads(provider.handle_tool_call(name, args, **extra))


def wait_for_facts(
    server: HindsightServer, user_key: str, until: Callable[[list[str]], bool], what: str
) -> list[str]:
    """The facts of ``user_key`` once ``until`` holds for them; AssertionError after ``WAIT``."""
    deadline = time.monotonic() + WAIT
    while True:
        got = facts(server, user_key)
        if until(got):
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; the bank holds {got!r}")
        time.sleep(0.25)


def facts(server: HindsightServer, user_key: str) -> list[str]:
    """The facts in the bank of ``user_key`` on the server, without Hindsight's ``| Involving``."""
    return sorted(text.split(" | ")[0] for text in server.memories(bank_id("chorus", user_key)))


def extraction_inputs(llm: FakeOpenAI) -> list[str]:
    """What Hindsight asked the model to extract facts from, in order."""
    return [
        str(body["messages"][-1]["content"])
        for body in list(llm.requests)
        if "Extract facts from the following chunk" in str(body["messages"][-1]["content"])
    ]


# -- 1. a session is retained at its end and recalled in the next -------------------

ALICE = "telegram:1"


def test_a_session_retained_at_its_end_is_recalled_in_the_next(
    tmp_path: Path, hindsight: HindsightServer, llm: FakeOpenAI, model: HindsightLLM
) -> None:
    home = tmp_path / "home"
    worker = open_provider(home, hindsight, ALICE)
    worker.sync_turn("My sister Anna lives in Lisbon.", "Lovely city.")
    worker.sync_turn("I play the cello on Sundays.", "How nice.")
    worker.sync_turn("I play the cello on Sundays.", "How nice.")  # a re-delivered job
    assert facts(hindsight, ALICE) == []  # buffered on disk until the session ends
    worker.on_session_end([])

    bank = bank_id("chorus", ALICE)
    expected = ["I play the cello on Sundays.", "My sister Anna lives in Lisbon."]
    wait_for_facts(hindsight, ALICE, lambda got: got == expected, "the session's facts")
    assert hindsight.documents(bank) == ["chorus-s1-1"]  # one document per session part
    [extracted] = [text for text in extraction_inputs(llm) if "cello" in text]
    assert (
        "Content:\nUser: My sister Anna lives in Lisbon.\nAssistant: Lovely city.\n"
        "User: I play the cello on Sundays.\nAssistant: How nice."
    ) in extracted
    assert "on telegram (chorus)" in extracted and "session_id: s1" in extracted

    gateway = open_provider(home, hindsight, ALICE, context="primary", session="s2")
    recalled = gateway.prefetch("where does my sister Anna live")
    assert "- My sister Anna lives in Lisbon." in recalled
    assert re.search(r"Lisbon\. .*\(\d{4}-\d\d-\d\d\)", recalled)  # with the day it was said
    found = call(gateway, "hindsight_recall", query="where does my sister Anna live")
    assert found["success"] is True
    anna = [r for r in found["results"] if r["text"].startswith("My sister Anna lives in Lisbon.")]
    assert len(anna) == 1 and anna[0]["type"] == "world" and anna[0]["when"]
    assert gateway.breaker.failures == 0 and model.calls.get("extract", 0) >= 1


def test_a_withdrawn_turn_leaves_the_document_it_was_retained_in(
    tmp_path: Path, hindsight: HindsightServer
) -> None:
    """Retaining a part again under its document id replaces it on the server (an undo)."""
    owner = "telegram:11"
    worker = open_provider(tmp_path / "home", hindsight, owner)
    worker.sync_turn("I keep three cats.", "Lovely.")
    worker.sync_turn("I hate all cats.", "Oh.")
    worker.on_session_end([])
    wait_for_facts(hindsight, owner, lambda got: len(got) == 2, "both facts")
    withdrawn = {"turn": 2, "user_content": "I hate all cats.", "assistant_content": "Oh."}
    worker.on_session_switch("s1", rewound=True, reason="undo", withdrawn_turn=withdrawn)
    wait_for_facts(hindsight, owner, lambda got: got == ["I keep three cats."], "the undo")
    assert hindsight.documents(bank_id("chorus", owner)) == ["chorus-s1-1"]


# -- 2. two people, two banks -------------------------------------------------------------

ANN, BEN, ROOM = "slack:U1", "slack:U2", "slack#chat:C2"


def test_two_people_never_see_each_other(tmp_path: Path, hindsight: HindsightServer) -> None:
    home = tmp_path / "home"
    ann = open_provider(home, hindsight, ANN, session="ann")
    ben = open_provider(home, hindsight, BEN, session="ben")
    ann.sync_turn("My sister Anna lives in Lisbon.", "Nice.")
    ben.sync_turn("My sister Maria lives in Porto.", "Ok.")
    ann.on_session_end([])
    ben.on_session_end([])
    wait_for_facts(hindsight, ANN, bool, "Ann's fact")
    wait_for_facts(hindsight, BEN, bool, "Ben's fact")
    assert facts(hindsight, ANN) == ["My sister Anna lives in Lisbon."]
    assert facts(hindsight, BEN) == ["My sister Maria lives in Porto."]

    question = "where does my sister live"  # matches both facts equally
    mine, his = ann.prefetch(question), ben.prefetch(question)
    assert "Lisbon" in mine and "Porto" not in mine
    assert "Porto" in his and "Lisbon" not in his
    assert "Lisbon" not in json.dumps(call(ben, "hindsight_recall", query=question))
    answer = call(ben, "hindsight_reflect", query=question)["answer"]
    assert "Porto" in answer and "Lisbon" not in answer

    room = open_provider(home, hindsight, ROOM, session="room")  # a group chat
    room.sync_turn("I keep bees in the garden.", "Nice.", speaker=ANN)
    room.sync_turn("I keep goats on the farm.", "Fun.", speaker=BEN)
    room.on_session_end([])
    wait_for_facts(hindsight, ANN, lambda got: len(got) == 2, "Ann's second fact")
    wait_for_facts(hindsight, BEN, lambda got: len(got) == 2, "Ben's second fact")
    assert "I keep goats on the farm." not in facts(hindsight, ANN)
    assert "I keep bees in the garden." not in facts(hindsight, BEN)
    hers = room.prefetch("what do I keep", speaker=ANN)
    his = room.prefetch("what do I keep", speaker=BEN)
    assert "bees" in hers and "goats" not in hers
    assert "goats" in his and "bees" not in his
    assert facts(hindsight, ROOM) == []  # the chat has no bank of its own
    banks = set(hindsight.banks())
    assert {bank_id("chorus", ANN), bank_id("chorus", BEN)} <= banks


# -- 3. the tools ---------------------------------------------------------------------------


def test_reflect_retain_and_recall_tools_on_the_real_server(
    tmp_path: Path, hindsight: HindsightServer, model: HindsightLLM
) -> None:
    owner = "telegram:3"
    provider = open_provider(tmp_path / "home", hindsight, owner, context="primary")
    # a bank Hindsight has never seen: nothing, and no error
    assert call(provider, "hindsight_recall", query="anything at all") == {
        "success": True,
        "results": [],
        "count": 0,
    }
    stored = call(provider, "hindsight_retain", content="My dog Biscuit is a beagle.")
    assert stored == {"success": True, "stored": True, "items": 1}
    wait_for_facts(hindsight, owner, lambda got: got == ["My dog Biscuit is a beagle."], "it")
    found = call(provider, "hindsight_recall", query="what breed is my dog Biscuit", budget="low")
    assert [r["text"].split(" | ")[0] for r in found["results"]] == ["My dog Biscuit is a beagle."]

    before = model.calls.get("reflect-done", 0)
    answer = call(
        provider,
        "hindsight_reflect",
        query="what kind of dog is Biscuit",
        context="for a birthday card",
        budget="mid",
    )
    assert answer["success"] is True
    assert "My dog Biscuit is a beagle." in answer["answer"]  # recalled by Hindsight's agent
    assert model.calls.get("reflect-done", 0) > before and model.unknown == []


def test_a_wrong_api_key_is_refused_by_the_real_server(
    tmp_path: Path, hindsight: HindsightServer
) -> None:
    for key in ("wrong-key", ""):
        provider = open_provider(tmp_path / "home", hindsight, "telegram:5", api_key=key)
        result = call(provider, "hindsight_recall", query="anything at all")
        assert result["success"] is False
        assert "UnauthorizedException 401" in result["error"]
        assert hindsight.api_key not in str(result)


def test_the_server_took_every_field_chorus_sent(hindsight: HindsightServer) -> None:
    """Hindsight logs (and ignores) body fields and query parameters it does not know."""
    log = hindsight.log()
    assert "Unknown parameters ignored" not in log
    assert " - ERROR - " not in log


# -- 4. the server goes away ------------------------------------------------------------------


def test_a_failed_extraction_keeps_the_turns_for_the_next_try(
    tmp_path: Path, hindsight: HindsightServer, model: HindsightLLM
) -> None:
    """Hindsight's model failing while it extracts a retained session: the retain fails
    (it is synchronous by default), the turns stay on disk and the next try stores them."""
    home, owner = tmp_path / "home", "telegram:5"
    worker = open_provider(home, hindsight, owner)
    worker.sync_turn("My cat is called Miso.", "Cute.")
    failures: list[tuple[str, str, str]] = []
    jobs = MemoryManager(on_failure=lambda *failure: failures.append(failure))
    jobs.add_provider(worker)
    model.extraction_fails = True
    try:
        jobs.on_session_end([])
    finally:
        model.extraction_fails = False
    assert model.calls.get("extract-failed", 0) >= 1
    assert failures == [("hindsight", "on_session_end", "BackendFailed")]
    assert facts(hindsight, owner) == []
    jobs.on_session_end([])  # the next background call (or the next session's) retries
    wait_for_facts(hindsight, owner, lambda got: got == ["My cat is called Miso."], "the kept turn")
    assert failures == [("hindsight", "on_session_end", "BackendFailed")]


def test_a_stopped_server_costs_the_turn_nothing_and_the_turns_wait_on_disk(
    tmp_path: Path, hindsight: HindsightServer
) -> None:
    home, owner = tmp_path / "home", "telegram:4"
    first = open_provider(home, hindsight, owner)
    first.sync_turn("I grow tomatoes on the balcony.", "Nice.")
    first.on_session_end([])
    wait_for_facts(hindsight, owner, bool, "the first session's fact")
    worker = open_provider(home, hindsight, owner, session="s2")
    worker.queue_prefetch("what do I grow on the balcony")  # the warm recall, after a turn
    worker.sync_turn("I keep bees in the garden.", "Nice.")

    assert hindsight.database_running()
    hindsight.stop(keep=True)
    assert not hindsight.database_running()
    failures: list[tuple[str, str, str]] = []
    manager = MemoryManager(on_failure=lambda *failure: failures.append(failure))
    gateway = HindsightProvider(environ={"HINDSIGHT_API_KEY": hindsight.api_key})
    manager.add_provider(gateway)
    manager.initialize_all(
        "s2",
        chorus_home=home,
        platform="telegram",
        user_key=owner,
        agent_context="primary",
        config={"base_url": hindsight.base_url},
    )
    began = time.monotonic()
    for _ in range(6):  # turns: the sixth finds the breaker open and asks nobody
        recalled = manager.prefetch("what do I grow on the balcony")
        assert "I grow tomatoes on the balcony." in recalled  # the warm recall stands in
    assert time.monotonic() - began < 10
    assert gateway.breaker.is_open and failures == []  # prefetch never raised
    paused = json.loads(manager.handle_tool_call("hindsight_recall", {"query": "tomatoes"}))
    assert paused["success"] is False and "paused after 5 failures" in paused["error"]

    worker.sync_turn("I also keep a parrot.", "Ok.")  # buffered: nothing to send yet
    jobs = MemoryManager(on_failure=lambda *failure: failures.append(failure))
    jobs.add_provider(worker)
    jobs.on_session_end([])  # a job: recorded for `chorus memory status`, not raised
    assert failures == [("hindsight", "on_session_end", "BackendFailed")]
    for _ in range(4):
        with pytest.raises(BackendFailed):
            worker.queue_prefetch("garden")
    assert worker.breaker.is_open
    worker.on_session_end([])  # paused: no call and no error, the turns stay on disk

    hindsight.start()  # the same data, port and API key
    revived = open_provider(home, hindsight, owner, session="s2")
    revived.on_session_end([])
    expected = [
        "I also keep a parrot.",
        "I grow tomatoes on the balcony.",
        "I keep bees in the garden.",
    ]
    wait_for_facts(hindsight, owner, lambda got: got == expected, "the waiting turns")


def test_a_linked_person_recalls_the_bank_of_its_account(
    tmp_path: Path, hindsight: HindsightServer
) -> None:
    ann, ann_slack, ben = "telegram:41", "slack:U41", "telegram:42"
    home = tmp_path / "home"
    for key, said in (
        (ann, "My sister Anna lives in Lisbon."),
        (ben, "My sister Maria lives in Porto."),
    ):
        before = open_provider(home, hindsight, key, session=f"before-{key}")
        before.sync_turn(said, "Nice.")
        before.on_session_end([])
        wait_for_facts(hindsight, key, bool, f"{key}'s fact")
    person, accounts = link(tmp_path / "state.db", ann, ann_slack)
    after = HindsightProvider(environ={"HINDSIGHT_API_KEY": hindsight.api_key})
    after.initialize(
        "after",
        chorus_home=home,
        platform="slack",
        user_key=person,
        agent_context="primary",
        config={"base_url": hindsight.base_url},
        account_keys=accounts,
    )
    question = "where does my sister live"
    recalled = after.prefetch(question)
    assert "Lisbon" in recalled and "Porto" not in recalled
    found = call(after, "hindsight_recall", query=question)["results"]
    assert [r["text"].split(" | ")[0] for r in found] == ["My sister Anna lives in Lisbon."]
    assert "Lisbon" not in open_provider(home, hindsight, ben, session="ben").prefetch(question)

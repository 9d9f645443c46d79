"""The openviking provider against the real OpenViking server (``openviking-server`` 0.5.2).

One server for the module (:mod:`tests.real_servers.openviking_server`), its
embedding model and VLM a FakeOpenAI whose responder answers OpenViking's
memory extraction with one event memory per user message. Everything goes
through chorus's own :class:`OpenVikingProvider`; the server is then asked
directly (its sessions, archives, tasks and files) what really arrived.
Each test has users of its own, so they share the server without meeting.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plugins.memory.openviking import OpenVikingProvider
from plugins.memory.openviking._ops import ov_user
from tests.fakes.openai_server import FakeOpenAI
from tests.plugins.linked_people import link
from tests.real_servers.conftest import real_server_bin
from tests.real_servers.openviking_server import MemoryLLM, RealOpenViking

pytestmark = pytest.mark.real_server


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def memory_llm() -> Iterator[tuple[FakeOpenAI, MemoryLLM]]:
    responder = MemoryLLM()
    with FakeOpenAI() as fake:
        fake.responder(responder)
        yield fake, responder


@pytest.fixture(scope="module")
def ov(
    memory_llm: tuple[FakeOpenAI, MemoryLLM], request: pytest.FixtureRequest
) -> Iterator[RealOpenViking]:
    executable = real_server_bin("openviking", "openviking-server")
    server = RealOpenViking(executable, memory_llm[0])
    began = time.monotonic()
    try:
        server.start()
        yield server
    finally:
        server.close()
        plugins = request.config.pluginmanager
        reporter, capture = (
            plugins.get_plugin("terminalreporter"),
            plugins.get_plugin("capturemanager"),
        )
        if reporter is not None and capture is not None and server.startup_seconds:
            starts = ", ".join(f"{s:.1f}" for s in server.startup_seconds)
            with capture.global_and_fixture_disabled():
                reporter.write_line(
                    f"\nopenviking-server: started {len(server.startup_seconds)}x in {starts} s;"
                    f" module {time.monotonic() - began:.1f} s"
                )


@pytest.fixture
def llm(memory_llm: tuple[FakeOpenAI, MemoryLLM]) -> MemoryLLM:
    return memory_llm[1]


@pytest.fixture(autouse=True)
def running(ov: RealOpenViking) -> None:
    """Each test starts with the server up (a failing one shows its log: ``failure_log``)."""
    if ov.process is None or ov.process.poll() is not None:
        ov.start()


def open_ov(
    home: Path,
    ov: RealOpenViking,
    user_key: str,
    context: str = "background",
    session: str = "s1",
    **kwargs: Any,
) -> OpenVikingProvider:
    provider = OpenVikingProvider(environ={"OPENVIKING_API_KEY": ov.root_key}, **kwargs)
    provider.initialize(
        session,
        chorus_home=home,
        platform="telegram",
        user_key=user_key,
        agent_context=context,
        config={"base_url": ov.base_url, "timeout": 10.0},
    )
    return provider


def call(provider: OpenVikingProvider, name: str, speaker: str | None = None, **args: Any) -> Any:
    extra = {} if speaker is None else {"speaker": speaker}
    return json.loads(provider.handle_tool_call(name, args, **extra))


def pending(home: Path) -> list[Path]:
    return sorted((home / "providers" / "openviking").glob("*/*/*/pending/*.json"))


def commit_ids(ov: RealOpenViking, user: str) -> list[str]:
    """The ids of the sessions chorus committed for ``user``, oldest first."""
    return [str(t["resource_id"]) for t in reversed(ov.settle(user))]


def holding(files: dict[str, str], text: str) -> list[str]:
    return [uri for uri, body in files.items() if text in body]


def test_a_session_is_committed_at_its_end_and_recalled_in_the_next(
    ov: RealOpenViking, llm: MemoryLLM, tmp_path: Path
) -> None:
    alice = "telegram:1001"
    user = ov_user(alice)
    home = tmp_path / "home"
    worker = open_ov(home, ov, alice)
    turns = [
        ("My sister Anna lives in Lisbon.", "Lovely city."),
        ("My sourdough starter is called Bubbles.", "Cute name."),
    ]
    for said, answered in turns:
        worker.sync_turn(said, answered)
    assert ov.memory_files(user) == {}  # batched on disk until the session ends
    worker.on_session_end([])
    assert pending(home) == []
    worker.shutdown()

    [session] = commit_ids(ov, user)
    assert session.startswith("chorus-")
    assert ov.archived(user, session) == [
        (role, text)
        for said, answered in turns
        for role, text in (("user", said), ("assistant", answered))
    ]
    assert ov.session(user, session)["commit_count"] == 1
    files = ov.memory_files(user)
    assert len(holding(files, "My sister Anna lives in Lisbon.")) == 1
    assert len(holding(files, "My sourdough starter is called Bubbles.")) == 1
    assert all(uri.startswith(f"viking://user/{user}/memories/") for uri in files)

    nxt = open_ov(home, ov, alice, session="s2")
    nxt.queue_prefetch("where does my sister Anna live")  # warms the recall cache
    gateway = open_ov(home, ov, alice, context="primary", session="s2")
    recall = gateway.prefetch("where does my sister Anna live")
    assert "My sister Anna lives in Lisbon." in recall
    found = call(gateway, "viking_search", query="what is my sourdough starter called", limit=3)
    assert found["success"] and found["count"] >= 1
    assert "Bubbles" in found["results"][0]["abstract"]
    assert all(hit["uri"].startswith(f"viking://user/{user}/") for hit in found["results"])
    nxt.shutdown()
    gateway.shutdown()


def test_one_person_never_reaches_another(ov: RealOpenViking, tmp_path: Path) -> None:
    alice, bob, chat = "telegram:2001", "telegram:2002", "telegram#chat:-2000"
    home = tmp_path / "home"
    mine = open_ov(home, ov, alice)
    group = open_ov(home, ov, chat)
    mine.sync_turn("I keep three cats called Mochi, Tofu and Miso.", "Lovely.")
    group.sync_turn("I keep bees in my garden in Braga.", "Nice.", speaker=bob)
    mine.on_session_end([])
    group.on_session_end([{"role": "user", "content": "x", "speaker": bob}])
    ov.settle(ov_user(alice))
    ov.settle(ov_user(bob))

    alice_files, bob_files = ov.memory_files(ov_user(alice)), ov.memory_files(ov_user(bob))
    assert holding(alice_files, "Mochi") and not holding(alice_files, "bees")
    assert holding(bob_files, "bees") and not holding(bob_files, "Mochi")
    assert ov.memory_files(ov_user(chat)) == {}  # a group's turns belong to their speaker

    assert "Mochi" in mine.prefetch("what are my cats called")
    assert "bees" not in mine.prefetch("where do I keep bees in the garden")
    assert "bees" in group.prefetch("where do I keep bees in the garden", speaker=bob)
    assert "Mochi" not in group.prefetch("what are my cats called", speaker=bob)
    cats = call(group, "viking_search", bob, query="cats called Mochi Tofu Miso")
    assert cats["success"] and all("Mochi" not in hit["abstract"] for hit in cats["results"])

    # Bob's memory by its URI: chorus refuses it to Alice, and so does the server
    [bees] = holding(bob_files, "bees")
    for tool in ("viking_read", "viking_forget"):
        refused = call(mine, tool, uri=bees)
        assert refused["success"] is False, refused
    listed = call(mine, "viking_list", uri=bees.rsplit("/", 1)[0])
    assert listed["success"] is False or listed["entries"] == []
    with pytest.raises(AssertionError, match="PERMISSION_DENIED"):
        ov.call(ov_user(alice), "GET", "/api/v1/content/read", params={"uri": bees})
    assert holding(ov.memory_files(ov_user(bob)), "bees") == [bees]
    mine.shutdown()
    group.shutdown()


def test_the_six_tools(ov: RealOpenViking, tmp_path: Path) -> None:
    carol = "telegram:3001"
    user = ov_user(carol)
    home = tmp_path / "home"
    provider = open_ov(home, ov, carol, context="primary")
    assert [s["name"] for s in provider.get_tool_schemas()] == [
        "viking_search",
        "viking_read",
        "viking_list",
        "viking_remember",
        "viking_forget",
        "viking_commit",
    ]

    remembered = call(provider, "viking_remember", content="My dog Biscuit is a beagle.")
    assert remembered == {"success": True, "remembered": "My dog Biscuit is a beagle."}
    ov.settle(user)
    found = call(provider, "viking_search", query="what breed is my dog Biscuit", limit=3)
    assert found["success"] and found["count"] >= 1, found
    [uri] = [h["uri"] for h in found["results"] if "Biscuit is a beagle" in h["abstract"]][:1]
    assert not uri.rsplit("/", 1)[1].startswith(".")  # the memory itself, not a summary

    top = call(provider, "viking_list")
    assert top["success"], top
    assert {"uri": f"viking://user/{user}/memories/events", "is_dir": True} in top["entries"]
    folder = call(provider, "viking_list", uri=uri.rsplit("/", 1)[0])
    assert {"uri": uri, "is_dir": False} in folder["entries"]
    read = call(provider, "viking_read", uri=uri)
    assert read["success"] and "My dog Biscuit is a beagle." in read["content"]
    home_alias = call(
        provider, "viking_read", uri=uri.replace(f"viking://user/{user}", "viking://~")
    )
    assert home_alias["content"] == read["content"]
    refused = call(provider, "viking_read", uri="viking://resources/.abstract.md")
    assert refused["success"] is False

    assert call(provider, "viking_forget", uri=uri) == {
        "success": True,
        "uri": uri,
        "deleted": True,
    }
    ov.settle(user)
    assert holding(ov.memory_files(user), "Biscuit") == []
    after = call(provider, "viking_search", query="what breed is my dog Biscuit")
    assert uri not in [h["uri"] for h in after["results"]]
    gone = call(provider, "viking_forget", uri=uri)
    assert gone["success"] is False and "nothing at" in gone["error"], gone
    missing = call(provider, "viking_read", uri=uri)
    assert missing["success"] is False and "nothing at" in missing["error"]

    provider.sync_turn("I collect stamps from Peru.", "Fun.")  # the batch, committed on demand
    assert call(provider, "viking_commit") == {"success": True, "committed": 2}
    ov.settle(user)
    assert len(holding(ov.memory_files(user), "I collect stamps from Peru.")) == 1
    assert call(provider, "viking_commit") == {"success": True, "committed": 0}
    provider.shutdown()


def test_a_commit_cut_short_by_a_killed_server_is_finished_once(
    ov: RealOpenViking, llm: MemoryLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dave = "telegram:4001"
    user = ov_user(dave)
    home = tmp_path / "home"
    worker = open_ov(home, ov, dave)
    facts = [f"The river {name} flows past my town." for name in ("Douro", "Tagus", "Minho")]
    for i, fact in enumerate(facts):
        worker.sync_turn(fact, f"Noted {i}.")
    client = worker._client
    assert client is not None
    real_call = client.call
    added: list[str] = []

    def dying(operation: str, *args: Any, **kwargs: Any) -> Any:
        if operation == "add message" and len(added) == 2:
            ov.kill()  # SIGKILL between two messages of the commit
        result = real_call(operation, *args, **kwargs)
        if operation == "add message":
            added.append(operation)
        return result

    monkeypatch.setattr(client, "call", dying)
    with pytest.raises(RuntimeError):
        worker.on_session_end([])
    [marker] = pending(home)
    session = json.loads(marker.read_text())["commit_id"]
    worker.shutdown()  # the worker dies too

    ov.start()
    meta = ov.session(user, session)
    assert (meta["message_count"], meta["commit_count"]) == (2, 0)  # what arrived survived
    fresh = open_ov(home, ov, dave, session="s2")
    fresh.sync_turn("Something else entirely.", "ok")  # the next call finishes the old commit
    assert pending(home) == []
    ov.settle(user)
    expected = [
        (role, text)
        for i, fact in enumerate(facts)
        for role, text in (("user", fact), ("assistant", f"Noted {i}."))
    ]
    assert ov.archived(user, session) == expected  # each message once, in order
    assert ov.session(user, session)["commit_count"] == 1
    files = ov.memory_files(user)
    for fact in facts:
        assert llm.extracted(fact) == 1
        assert len(holding(files, fact)) == 1

    # killed after the commit was acknowledged, before the marker was removed
    fresh.sync_turn("The lake near my house is called Alqueva.", "ok")
    batches = fresh._batches
    assert batches is not None
    sealed = batches.seal(dave, "s2")
    assert sealed is not None
    saved = tmp_path / "saved-marker.json"
    shutil.copy(sealed.path, saved)
    fresh.on_session_end([])
    shutil.copy(saved, sealed.path)
    again = open_ov(home, ov, dave, session="s3")
    again.queue_prefetch("lakes")  # finds the marker; the server's counters say: done
    assert pending(home) == []
    ov.settle(user)
    assert ov.session(user, sealed.commit_id)["commit_count"] == 1
    assert len(ov.archived(user, sealed.commit_id)) == 4  # "Something else" + the lake
    assert llm.extracted("The lake near my house is called Alqueva.") == 1
    for provider in (fresh, again):
        provider.shutdown()


def test_a_server_killed_while_it_extracts_finishes_the_commit_after_restart(
    ov: RealOpenViking, llm: MemoryLLM, tmp_path: Path
) -> None:
    erin = "telegram:5001"
    user = ov_user(erin)
    home = tmp_path / "home"
    worker = open_ov(home, ov, erin)
    fact = "My bicycle is a red Brompton."
    worker.sync_turn(fact, "Nice bike.")
    llm.delay = 120.0  # the extraction's LLM answer is slow: the server dies meanwhile
    try:
        asked = llm.extracted(fact)
        worker.on_session_end([])  # acknowledged: the archive is written, extraction queued
        assert pending(home) == []
        deadline = time.monotonic() + 60
        while llm.extracted(fact) == asked:
            assert time.monotonic() < deadline, "the server never asked for the extraction"
            time.sleep(0.1)
        ov.kill()
    finally:
        llm.delay = 0.0
    ov.start()
    [session] = commit_ids(ov, user)  # settles: the server resumes its queued extraction
    assert ov.session(user, session)["commit_count"] == 1
    assert ov.archived(user, session) == [("user", fact), ("assistant", "Nice bike.")]
    assert llm.extracted(fact) == asked + 2  # the killed extraction, and the resumed one
    assert len(holding(ov.memory_files(user), fact)) == 1
    recall = open_ov(home, ov, erin, context="primary", session="s2")
    assert fact in recall.prefetch("what bicycle do I ride, a Brompton?")
    worker.shutdown()
    recall.shutdown()


def test_a_stopped_server_costs_no_turn_and_opens_the_breaker(
    ov: RealOpenViking, tmp_path: Path
) -> None:
    frank = "telegram:6001"
    user = ov_user(frank)
    home = tmp_path / "home"
    clock = Clock()
    worker = open_ov(home, ov, frank, clock=clock)
    gateway = open_ov(home, ov, frank, context="primary", clock=clock)
    worker.sync_turn("My favourite tea is genmaicha.", "Toasty.")
    worker.on_session_end([])
    ov.settle(user)
    worker.queue_prefetch("which tea do I like")  # the warm recall of the last turn
    assert "genmaicha" in gateway.prefetch("which tea do I like")

    ov.stop()
    began = time.monotonic()
    worker.sync_turn("My passport number is X1234567.", "Noted.")  # local: works
    for _ in range(5):
        assert "genmaicha" in gateway.prefetch("which tea do I like")  # the cached recall
    assert gateway.breaker.is_open  # unhealthy: calls are paused
    paused = call(gateway, "viking_search", query="tea")
    assert paused["success"] is False and "paused" in paused["error"]
    with pytest.raises(RuntimeError):
        worker.on_session_end([])  # the job fails, to be retried; the batch is kept
    assert len(pending(home)) == 1
    assert time.monotonic() - began < 30

    ov.start()
    clock.now += 3600  # past the breaker's cooldown
    worker.queue_prefetch("passport")  # the next background call commits what waited
    assert pending(home) == []
    ov.settle(user)
    assert len(holding(ov.memory_files(user), "My passport number is X1234567.")) == 1
    assert "X1234567" in gateway.prefetch("what is my passport number")
    assert not gateway.breaker.is_open
    worker.shutdown()
    gateway.shutdown()


def test_a_server_not_in_trusted_mode_mixes_no_one_up(ov: RealOpenViking, tmp_path: Path) -> None:
    """``api_key`` auth mode: the server ignores the user chorus names. With its root
    key nothing works; with one user's key every chorus user would land in that one
    space, which chorus notices: it commits nothing and recalls nothing."""
    grace, heidi = "telegram:7001", "telegram:7002"
    ov.reconfigure(auth_mode="api_key")
    try:
        home = tmp_path / "root"
        rooted = open_ov(home, ov, grace, context="primary")
        rooted.sync_turn("My locker code is 4411.", "Noted.")
        with pytest.raises(RuntimeError, match="HTTP 403"):
            rooted.on_session_end([])  # a ROOT key is refused on the data routes
        assert len(pending(home)) == 1
        denied = call(rooted, "viking_search", query="locker code")
        assert denied["success"] is False and "HTTP 403" in denied["error"]
        rooted.shutdown()

        key = ov.user_key("shared")
        people = ((grace, "My locker code is 4411."), (heidi, "I hide my spare key."))
        for n, (person, fact) in enumerate(people):
            home = tmp_path / f"keyed-{n}"  # a worker each: both commits reach the server
            keyed = OpenVikingProvider(environ={"OPENVIKING_API_KEY": key})
            keyed.initialize(
                "s1",
                chorus_home=home,
                platform="telegram",
                user_key=person,
                agent_context="primary",
                config={"base_url": ov.base_url, "timeout": 10.0},
            )
            keyed.sync_turn(fact, "Noted.")
            with pytest.raises(RuntimeError, match="user not honoured"):
                keyed.on_session_end([])
            found = call(keyed, "viking_search", query="locker code spare key")
            assert found["success"] is False and "HTTP 403" in found["error"]
            assert keyed.prefetch("where is my locker code") == ""
            assert len(pending(home)) == 1  # kept for a server that tells people apart
            keyed.shutdown()
        # the two sessions chorus opened there (to read their owner) stayed empty
        opened = ov.call("shared", "GET", "/api/v1/sessions", key=key)
        assert len(opened) == 2, opened
        for session in opened:
            meta = ov.call("shared", "GET", f"/api/v1/sessions/{session['session_id']}", key=key)
            assert (meta["total_message_count"], meta["commit_count"]) == (0, 0), meta
    finally:
        ov.reconfigure(auth_mode="trusted")


def test_a_linked_person_reads_the_space_of_its_account(ov: RealOpenViking, tmp_path: Path) -> None:
    ann, ann_slack, bob = "telegram:4001", "slack:U4001", "telegram:4002"
    home = tmp_path / "home"
    for key, fact in ((ann, "My dog Biscuit is a beagle."), (bob, "My dog Rex is a poodle.")):
        assert call(open_ov(home, ov, key), "viking_remember", content=fact)["success"]
        ov.settle(ov_user(key))
    person, accounts = link(tmp_path / "state.db", ann, ann_slack)
    after = OpenVikingProvider(environ={"OPENVIKING_API_KEY": ov.root_key})
    after.initialize(
        "s2",
        chorus_home=home,
        platform="slack",
        user_key=person,
        agent_context="primary",
        config={"base_url": ov.base_url, "timeout": 10.0},
        account_keys=accounts,
    )
    recalled = after.prefetch("what breed is my dog Biscuit")
    assert "beagle" in recalled and "poodle" not in recalled
    found = call(after, "viking_search", query="what breed is my dog Biscuit", limit=3)
    [uri] = [h["uri"] for h in found["results"] if "Biscuit is a beagle" in h["abstract"]][:1]
    assert uri.startswith(f"viking://user/{ov_user(ann)}/")
    assert "My dog Biscuit is a beagle." in call(after, "viking_read", uri=uri)["content"]
    assert call(after, "viking_forget", uri=uri)["success"] is False  # the account's, kept
    assert holding(ov.memory_files(ov_user(ann)), "Biscuit")
    assert call(open_ov(home, ov, bob), "viking_read", uri=uri)["success"] is False
    after.shutdown()

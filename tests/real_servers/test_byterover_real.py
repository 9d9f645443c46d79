"""The byterover provider against the real ``brv`` CLI (byterover-cli 3.14.0), offline.

One brv daemon for the module (:mod:`tests.real_servers.byterover_cli`), its
LLM a FakeOpenAI whose responder curates by UPSERTing the text brv was given
and answers a query with the notes brv's search matched. Everything goes
through chorus's own :class:`ByteRoverProvider` with ``binary`` set to the
real brv; what brv wrote is then read from the context trees on disk. Each
test has a CHORUS_HOME of its own, so its people's trees are new projects.
"""

from __future__ import annotations

import json
import logging
import shutil
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plugins.memory.byterover import ByteRoverProvider
from plugins.memory.byterover._runner import BrvFailed, BrvMissing
from tests.fakes.openai_server import FakeOpenAI
from tests.plugins.linked_people import link
from tests.real_servers.byterover_cli import BrvLLM, RealBrv
from tests.real_servers.conftest import real_server_bin

pytestmark = pytest.mark.real_server

ALICE = "telegram:1001"
BOB = "telegram:1002"
ROOM = "telegram#chat:-1003"


@pytest.fixture(scope="module")
def llm() -> Iterator[tuple[FakeOpenAI, BrvLLM]]:
    responder = BrvLLM()
    with FakeOpenAI(model="fake-model") as fake:
        fake.responder(responder)
        yield fake, responder


@pytest.fixture(scope="module")
def brv(llm: tuple[FakeOpenAI, BrvLLM], request: pytest.FixtureRequest) -> Iterator[RealBrv]:
    cli = RealBrv(real_server_bin("byterover", "brv"), llm[0])
    llm[1].brv = cli
    began = time.monotonic()
    try:
        cli.connect()
        yield cli
    finally:
        cli.close()
        left = cli.processes()
        reporter = request.config.pluginmanager.get_plugin("terminalreporter")
        capture = request.config.pluginmanager.get_plugin("capturemanager")
        if reporter is not None and capture is not None:
            with capture.global_and_fixture_disabled():
                reporter.write_line(f"\nbrv: module {time.monotonic() - began:.1f} s")
        assert left == [], f"brv processes left running: {left}"


@pytest.fixture
def responder(llm: tuple[FakeOpenAI, BrvLLM]) -> Iterator[BrvLLM]:
    yield llm[1]
    llm[1].fail = llm[1].hang = False


@pytest.fixture(autouse=True)
def brv_environment(brv: RealBrv, monkeypatch: pytest.MonkeyPatch) -> None:
    """chorus runs brv with its own environment: the one of this brv and its daemon."""
    for name, value in brv.environ().items():
        monkeypatch.setenv(name, value)


def workdir(home: Path, user_key: str) -> Path:
    platform, _, ident = user_key.partition(":")
    kind = "chats" if "#chat" in platform else "users"
    return home / "providers" / "byterover" / kind / platform.split("#")[0] / ident


def open_brv(
    home: Path,
    binary: Path | str,
    user_key: str = ALICE,
    context: str = "background",
    session: str = "s1",
    timeout: float = 60.0,
) -> ByteRoverProvider:
    provider = ByteRoverProvider()
    provider.initialize(
        session,
        chorus_home=home,
        platform="telegram",
        user_key=user_key,
        agent_context=context,
        # recall is asserted here, not raced: a person's first query starts brv's agent
        config={"binary": str(binary), "timeout": timeout, "prefetch_timeout": timeout},
    )
    return provider


def call(provider: ByteRoverProvider, name: str, **args: Any) -> dict[str, Any]:
    result = json.loads(provider.handle_tool_call(name, args, session_id="s1"))
    assert isinstance(result, dict)
    return result


def test_a_synced_turn_is_curated_into_the_persons_context_tree(
    brv: RealBrv, responder: BrvLLM, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    worker = open_brv(home, brv.executable)
    asked = len(responder.tasks)
    worker.sync_turn("My sister Ines lives in Porto.", "Good to know.", session_id="s1")
    worker.sync_turn("My sister Ines lives in Porto.", "Good to know.", session_id="s1")  # again
    assert responder.tasks[asked:] == ["curate"]  # curated once
    notes = brv.notes(workdir(home, ALICE))
    assert len(notes) == 1
    [(path, text)] = notes.items()
    assert path.startswith("people/notes/note_") and path.endswith(".md")
    assert "User: My sister Ines lives in Porto.\nAssistant: Good to know." in text
    status = call(open_brv(home, brv.executable, context="primary"), "brv_status")["status"]
    assert status["projectRoot"] == str(workdir(home, ALICE))
    assert status["contextTreeDir"] == str(workdir(home, ALICE) / ".brv" / "context-tree")
    assert status["cliVersion"] == "3.14.0"


def test_recall_in_the_next_session(brv: RealBrv, responder: BrvLLM, tmp_path: Path) -> None:
    home = tmp_path / "home"
    open_brv(home, brv.executable).sync_turn("My sourdough starter is called Bubbles.", "Cute.")
    gateway = open_brv(home, brv.executable, context="primary", session="s2")
    recall = gateway.prefetch("What is my sourdough starter called?")
    assert "My sourdough starter is called Bubbles." in recall
    answer = call(gateway, "brv_query", query="What did I name my sourdough starter?")["answer"]
    assert "My sourdough starter is called Bubbles." in answer
    gateway.queue_prefetch("How old is my sourdough starter Bubbles?")
    warm = json.loads((workdir(home, ALICE) / "chorus-warm.json").read_text())
    assert "My sourdough starter is called Bubbles." in warm["text"]

    asked = len(responder.tasks)
    nothing = gateway.prefetch("Which bicycle do I ride?")
    assert nothing.startswith("**Summary**: No matching knowledge found")
    assert "Bubbles" not in nothing and len(responder.tasks) == asked  # brv asked no LLM


def test_two_people_and_a_room_stay_apart(brv: RealBrv, tmp_path: Path) -> None:
    home = tmp_path / "home"
    open_brv(home, brv.executable, ALICE).sync_turn("I love sushi and live in Lisbon.", "Noted.")
    open_brv(home, brv.executable, BOB).sync_turn("I hate sushi and live in Berlin.", "Noted.")
    room = open_brv(home, brv.executable, ROOM)
    room.sync_turn("I play the cello.", "Lovely.", speaker=ALICE)
    alice_notes = "".join(brv.notes(workdir(home, ALICE)).values())
    bob_notes = "".join(brv.notes(workdir(home, BOB)).values())
    assert "Lisbon" in alice_notes and "cello" in alice_notes and "Berlin" not in alice_notes
    assert "Berlin" in bob_notes and "Lisbon" not in bob_notes and "cello" not in bob_notes
    assert not (workdir(home, ROOM) / ".brv").exists()

    alice = open_brv(home, brv.executable, ALICE, context="primary", session="s2")
    bob = open_brv(home, brv.executable, BOB, context="primary", session="s2")
    mine = call(alice, "brv_query", query="Where do I live?")["answer"]
    theirs = call(bob, "brv_query", query="Where do I live?")["answer"]
    assert "Lisbon" in mine and "Berlin" not in mine
    assert "Berlin" in theirs and "Lisbon" not in theirs and "cello" not in theirs


def test_memory_writes_and_compression_are_curated_off_the_turn(
    brv: RealBrv, responder: BrvLLM, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    gateway = open_brv(home, brv.executable, context="primary")
    asked = len(responder.tasks)
    gateway.on_memory_write("add", "user", "Prefers short answers.")
    gateway.on_pre_compress(
        [
            {"role": "user", "content": "I am training for the Lisbon marathon."},
            {"role": "assistant", "content": "Great goal."},
        ]
    )
    gateway.shutdown()  # waits for the queued curates
    assert responder.tasks[asked:] == ["curate", "curate"]
    notes = "\n".join(brv.notes(workdir(home, ALICE)).values())
    assert "Memory about this person: Prefers short answers." in notes
    assert "Earlier in this conversation:\nUser: I am training for the Lisbon marathon." in notes


def test_an_llm_failure_fails_the_curate_and_the_turn_is_retried(
    brv: RealBrv, responder: BrvLLM, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="plugins.memory.byterover")
    home = tmp_path / "home"
    worker = open_brv(home, brv.executable)
    responder.fail = True  # brv exits 0 all the same
    with pytest.raises(BrvFailed, match="answered with an error"):
        worker.sync_turn("My locker code is 4711.", "Noted.")
    gateway = open_brv(home, brv.executable, context="primary")
    failed = call(gateway, "brv_curate", content="My gym is on Rua Augusta.")
    assert failed["success"] is False and "is an LLM provider connected?" in failed["error"]
    assert brv.notes(workdir(home, ALICE)) == {}
    assert not (workdir(home, ALICE) / "chorus-synced.txt").exists()
    assert "4711" not in "".join(r.getMessage() for r in caplog.records if r.levelno > 10)

    responder.fail = False
    worker.sync_turn("My locker code is 4711.", "Noted.")  # the job's retry
    [text] = brv.notes(workdir(home, ALICE)).values()
    assert "User: My locker code is 4711.\nAssistant: Noted." in text


def test_a_hung_brv_is_killed_at_the_timeout(
    brv: RealBrv, responder: BrvLLM, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    # brv's agent for this person is up first, with time to start on a loaded machine
    open_brv(home, brv.executable, context="primary").prefetch("Anything about trains?")
    gateway = open_brv(home, brv.executable, context="primary", timeout=10.0)
    responder.hang = True  # the LLM never answers
    result = call(gateway, "brv_curate", content="My train leaves at nine.")
    assert result["success"] is False and "took longer than 10 s" in result["error"]
    assert responder.hung_clients  # the run was waiting on the LLM when it was killed
    assert not any(Path(f"/proc/{pid}").exists() for pid in responder.hung_clients)
    assert brv.clients() == []
    assert gateway.breaker.failures == 1
    assert brv.notes(workdir(home, ALICE)) == {}


def test_a_missing_or_broken_brv_is_reported(brv: RealBrv, tmp_path: Path) -> None:
    home = tmp_path / "home"
    missing = tmp_path / "nowhere" / "brv"
    provider = ByteRoverProvider(environ={"BRV_BINARY": str(missing)})
    assert provider.is_available() is False
    assert "npm i -g byterover-cli" in str(provider.unavailable_reason)
    with pytest.raises(BrvMissing, match="npm i -g byterover-cli"):
        open_brv(home, missing)

    broken = tmp_path / "broken" / "brv"  # brv's entry point without its package
    broken.parent.mkdir()
    shutil.copy(brv.executable.resolve(), broken)
    broken.chmod(broken.stat().st_mode | stat.S_IXUSR)
    worker = open_brv(home, broken)
    with pytest.raises(BrvFailed, match=r"brv curate failed \(exit code 1\)"):
        worker.sync_turn("I moved to Faro.", "Sunny.")
    status = call(open_brv(home, broken, context="primary"), "brv_status")
    assert status["success"] is False and "exit code 1" in status["error"]
    assert not (workdir(home, ALICE) / "chorus-synced.txt").exists()


def test_a_linked_person_asks_the_tree_of_its_account(brv: RealBrv, tmp_path: Path) -> None:
    home = tmp_path / "home"
    open_brv(home, brv.executable, ALICE).sync_turn(
        "My sourdough starter is called Bubbles.", "Cute."
    )
    open_brv(home, brv.executable, BOB).sync_turn("My sourdough starter is called Blob.", "Ok.")
    person, accounts = link(tmp_path / "state.db", ALICE, "slack:U1001")
    after = ByteRoverProvider()
    after.initialize(
        "s2",
        chorus_home=home,
        platform="slack",
        user_key=person,
        agent_context="primary",
        config={"binary": str(brv.executable), "timeout": 60.0, "prefetch_timeout": 60.0},
        account_keys=accounts,
    )
    recall = after.prefetch("What is my sourdough starter called?")  # a new person: no tree
    assert "My sourdough starter is called Bubbles." in recall and "Blob" not in recall
    answer = call(after, "brv_query", query="What did I name my sourdough starter?")["answer"]
    assert "Bubbles" in answer and "Blob" not in answer

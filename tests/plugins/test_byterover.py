"""The ByteRover provider running a fake ``brv`` executable (first on ``PATH``) as a subprocess.

Tools, curates from turns, memory writes and compression, recall in the next
session, per-user working directories, a failing or hanging brv (killed on
timeout, the breaker opening), and a missing binary.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest

from plugins.memory import discover_memory_providers, load_memory_provider, resolve_config
from plugins.memory.byterover import ByteRoverProvider
from plugins.memory.byterover._config import DEFAULT_TIMEOUT, parse
from plugins.memory.byterover._provider import MAX_CURATE
from plugins.memory.byterover._runner import BrvFailed, BrvMissing, BrvTimeout
from tests.fakes.byterover_brv import (
    alive,
    calls,
    entries,
    install_fake_brv,
    path_with,
    set_mode,
)

ALICE = "telegram:1"
BOB = "telegram:2"
FOOTER = "\n\n---\nSource: ByteRover Knowledge Base"


@pytest.fixture
def brv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = install_fake_brv(tmp_path / "bin")
    monkeypatch.setenv("PATH", path_with(directory))
    return directory


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def workdir(home: Path, user_key: str) -> Path:
    platform, _, ident = user_key.partition(":")
    kind = "chats" if "#chat" in platform else "users"
    return home / "providers" / "byterover" / kind / platform.split("#")[0] / ident


def open_provider(
    home: Path,
    user_key: str = ALICE,
    context: str = "background",
    session: str = "s1",
    provider: ByteRoverProvider | None = None,
    **config: Any,
) -> ByteRoverProvider:
    provider = provider or ByteRoverProvider()
    provider.initialize(
        session,
        chorus_home=home,
        platform="telegram",
        user_key=user_key,
        agent_context=context,
        config=config,
        not_yet_known=1,
    )
    return provider


def call(provider: ByteRoverProvider, name: str, **args: Any) -> dict[str, Any]:
    speaker = args.pop("speaker", None)
    extra = {} if speaker is None else {"speaker": speaker}
    result = json.loads(provider.handle_tool_call(name, args, session_id="s1", **extra))
    assert isinstance(result, dict)
    return result


# -- discovery, configuration, a missing binary -------------------------------


def test_listed_available_with_brv_on_path(home: Path, brv: Path) -> None:
    info = {i.name: i for i in discover_memory_providers(home, "byterover")}["byterover"]
    assert (info.source, info.available, info.active, info.error) == ("bundled", True, True, None)
    provider = load_memory_provider("byterover", home)
    assert {t["name"] for t in provider.get_tool_schemas()} == {
        "brv_query",
        "brv_curate",
        "brv_status",
    }
    fields = {f["key"]: f for f in provider.get_config_schema()}
    assert set(fields) == {"binary", "timeout", "prefetch_timeout"}
    assert fields["binary"]["default"] == "brv" and fields["prefetch_timeout"]["default"] == 5.0
    resolved = resolve_config(provider, {"timeout": "7"}, {})
    assert parse(resolved, {}) == parse({"binary": "brv", "timeout": 7.0}, {})
    assert parse({"timeout": -1}, {}).timeout == DEFAULT_TIMEOUT
    assert parse({"prefetch_timeout": "12"}, {}).prefetch_timeout == 12.0
    assert parse({"prefetch_timeout": 0}, {}).prefetch_timeout == 5.0


def test_a_missing_binary_is_reported_with_the_install_hint(
    home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    provider = ByteRoverProvider()
    assert provider.is_available() is False
    assert "install with npm i -g byterover-cli" in str(provider.unavailable_reason)
    info = {i.name: i for i in discover_memory_providers(home)}["byterover"]
    assert info.available is False
    with pytest.raises(BrvMissing, match="npm i -g byterover-cli"):
        open_provider(home)


def test_a_binary_that_vanishes_gives_an_error_result(
    home: Path, brv: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    alice = open_provider(home, context="primary")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    result = call(alice, "brv_status")
    assert result["success"] is False and "npm i -g byterover-cli" in result["error"]
    assert alice.prefetch("anything") == ""
    assert alice.breaker.failures == 0  # not installed is not a failing backend


# -- tools ---------------------------------------------------------------------


def test_curate_query_status(home: Path, brv: Path) -> None:
    alice = open_provider(home, context="primary")
    assert call(alice, "brv_curate", content="Alice's dog Rufus is a beagle.") == {
        "success": True,
        "curated": True,
    }
    answer = call(alice, "brv_query", query="what breed is Rufus")["answer"]
    assert answer == f"- Alice's dog Rufus is a beagle.{FOOTER}"
    status = call(alice, "brv_status")["status"]
    assert status["projectRoot"] == str(workdir(home, ALICE))
    assert status["contextTreeStatus"] == "no_vc"
    assert [c["argv"][:3] for c in calls(brv)] == [
        [command, "--format", "json"] for command in ("curate", "query", "status")
    ]
    assert {c["cwd"] for c in calls(brv)} == {str(workdir(home, ALICE))}


def test_tool_arguments_are_checked(home: Path, brv: Path) -> None:
    alice = open_provider(home, context="primary")
    assert "query" in call(alice, "brv_query", query=" ")["error"]
    assert "content" in call(alice, "brv_curate", content=None)["error"]
    assert call(alice, "brv_nope")["error"] == "unknown tool 'brv_nope'"
    assert calls(brv) == []


def test_text_that_looks_like_an_option_is_text_to_brv(home: Path, brv: Path) -> None:
    alice = open_provider(home, context="primary")
    content = "--help the door code of the shed is 4711"
    assert call(alice, "brv_curate", content=content) == {"success": True, "curated": True}
    answer = call(alice, "brv_query", query="--version shed door code")["answer"]
    assert answer == f"- {content}{FOOTER}"
    assert alice.prefetch("-h what is the shed door code?") == answer
    worker = open_provider(home, user_key=ALICE)  # a digest's tail may start with a dash
    tail = ("--force the shed is painted green " * 200)[:MAX_CURATE]
    worker.on_pre_compress([{"role": "user", "content": "x" * 50 + tail}])
    assert entries(workdir(home, ALICE))[-1] == tail
    for run in calls(brv):
        if run["argv"][0] in ("curate", "query"):
            assert run["argv"][1:4] == ["--format", "json", "--"]


# -- writes and recall ----------------------------------------------------------


def test_sync_turn_curates_each_turn_once_in_order(home: Path, brv: Path) -> None:
    worker = open_provider(home)
    worker.sync_turn("I moved to Porto in May.", "Nice city.", session_id="s1")
    worker.sync_turn("I moved to Porto in May.", "Nice city.", session_id="s1")  # redelivered
    worker.sync_turn("My cat is called Mochi.", "Cute.", session_id="s1")
    worker.sync_turn("ignored", "ignored", session_id="s1", speaker=None)
    assert entries(workdir(home, ALICE))[:2] == [
        "User: I moved to Porto in May.\nAssistant: Nice city.",
        "User: My cat is called Mochi.\nAssistant: Cute.",
    ]
    assert len(entries(workdir(home, ALICE))) == 3
    flush = open_provider(home, context="flush")
    flush.sync_turn("Flush prompt.", "Done.")
    assert len(entries(workdir(home, ALICE))) == 3


def test_recall_in_the_next_session_and_the_warm_recall(home: Path, brv: Path) -> None:
    worker = open_provider(home)
    worker.sync_turn("My sister Ines lives in Porto.", "Good to know.")
    worker.queue_prefetch("where does Ines live")
    gateway = open_provider(home, context="primary", session="s2")
    assert "Ines lives in Porto" in gateway.prefetch("Where does Ines live?")
    set_mode(brv, "fail")
    assert "Ines lives in Porto" in gateway.prefetch("Where does Ines live?")  # the warm one


def test_memory_writes_and_compression_are_curated_off_the_turn(home: Path, brv: Path) -> None:
    gateway = open_provider(home, context="primary")
    gateway.on_memory_write("add", "user", "Prefers short answers.")
    gateway.on_memory_write("remove", "user", "Old fact.")
    kept = gateway.on_pre_compress(
        [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "I am training for the Lisbon marathon."},
            {"role": "assistant", "content": "Great goal."},
        ]
    )
    assert kept == ""
    gateway.shutdown()  # waits for the queued curates
    assert entries(workdir(home, ALICE)) == [
        "Memory about this person: Prefers short answers.",
        "Earlier in this conversation:\nUser: I am training for the Lisbon marathon.\n"
        "Assistant: Great goal.",
    ]


# -- isolation ---------------------------------------------------------------------


def test_each_user_has_a_working_directory_of_their_own(home: Path, brv: Path) -> None:
    alice, bob = open_provider(home, ALICE), open_provider(home, BOB)
    alice.sync_turn("I love sushi and live in Lisbon.", "Noted.")
    bob.sync_turn("I hate sushi and live in Berlin.", "Noted.")
    assert "Lisbon" in alice.prefetch("sushi city") and "Berlin" not in alice.prefetch("sushi")
    assert "Berlin" in bob.prefetch("sushi city") and "Lisbon" not in bob.prefetch("sushi")
    assert "Lisbon" not in call(bob, "brv_query", query="Lisbon sushi")["answer"]

    room = open_provider(home, "telegram#chat:-100")
    room.sync_turn("I play the cello.", "Lovely.", speaker=ALICE)
    room.sync_turn("I play the drums.", "Loud.", speaker=BOB)
    assert "cello" in room.prefetch("which instrument do I play", speaker=ALICE)
    assert "drums" not in room.prefetch("which instrument do I play", speaker=ALICE)
    assert entries(workdir(home, "telegram#chat:-100")) == []
    assert len({c["cwd"] for c in calls(brv)}) == 2


# -- a failing or hanging brv -------------------------------------------------------


def test_failures_open_the_breaker_and_nothing_raises(
    home: Path, brv: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="plugins.memory.byterover")
    now = [1000.0]
    provider = ByteRoverProvider(clock=lambda: now[0], failure_threshold=3, cooldown=30)
    alice = open_provider(home, context="primary", provider=provider)
    set_mode(brv, "fail")
    assert alice.prefetch("secret locker code") == ""
    failed = call(alice, "brv_query", query="secret locker")
    assert failed["success"] is False and "exit code 2" in failed["error"]
    assert call(alice, "brv_status")["success"] is False
    assert alice.breaker.is_open
    ran = len(calls(brv))
    assert "paused" in call(alice, "brv_curate", content="x y")["error"]
    assert alice.prefetch("secret locker code") == ""
    assert len(calls(brv)) == ran  # while open, brv is not run
    assert "secret" not in caplog.text and "not authenticated" not in caplog.text

    set_mode(brv, "")
    now[0] += 31
    assert call(alice, "brv_status")["success"] is True
    assert not alice.breaker.is_open


def test_an_error_in_brvs_answer_is_a_failure_and_the_turn_is_retried(
    home: Path, brv: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="plugins.memory.byterover")
    set_mode(brv, "refuse")  # exit code 0, "success": false
    worker = open_provider(home)
    with pytest.raises(BrvFailed, match="answered with an error"):
        worker.sync_turn("My locker code is 4711.", "Noted.")
    gateway = open_provider(home, context="primary", session="s2")
    assert gateway.prefetch("What is my locker code?") == ""
    failed = call(gateway, "brv_curate", content="Alice's dog Rufus is a beagle.")
    assert failed["success"] is False and "is an LLM provider connected?" in failed["error"]
    assert entries(workdir(home, ALICE)) == []
    assert "4711" not in "".join(r.getMessage() for r in caplog.records if r.levelno > 10)

    set_mode(brv, "")
    worker.sync_turn("My locker code is 4711.", "Noted.")  # the job's retry
    worker.sync_turn("My locker code is 4711.", "Noted.")
    assert entries(workdir(home, ALICE)) == ["User: My locker code is 4711.\nAssistant: Noted."]


def test_a_hanging_brv_is_killed_at_the_timeout(home: Path, brv: Path) -> None:
    alice = open_provider(home, context="primary", timeout=0.5)
    set_mode(brv, "hang")
    result = call(alice, "brv_query", query="anything")
    assert result["success"] is False and "took longer than 0.5 s" in result["error"]
    pids = [int(p) for p in (brv / "hung.pids").read_text().split()]
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in pids)  # brv and what it started are gone
    assert alice.breaker.failures == 1
    with pytest.raises(BrvTimeout, match="took longer"):
        open_provider(home, timeout=0.5).sync_turn("Hello there.", "Hi.")  # the job retries

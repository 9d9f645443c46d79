"""``chorus console`` as a person uses it: a real process, stdin, signals, the fake endpoint."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory.paths import ChorusPaths, UserKey
from memory.transcripts import SessionDB
from tests.fakes import FakeOpenAI
from tests.waiting import until_sync

CHORUS = Path(sys.executable).with_name("chorus")


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def console_env(home: Path, server: FakeOpenAI | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
    env.update({"CHORUS_HOME": str(home), "USER": "dana", "LOGNAME": "dana"})
    if server is not None:
        env.update({"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-key"})
    env.update(extra)
    return env


def chat(
    home: Path, server: FakeOpenAI, stdin: str, **extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CHORUS), "console"],
        input=stdin,
        capture_output=True,
        text=True,
        env=console_env(home, server, **extra),
        timeout=60,
    )


def ended_sessions(home: Path) -> list[Any]:
    with SessionDB(ChorusPaths(home).state_db) as db:
        return db.list_sessions(user_key="console:dana")


def test_conversation_remembers_user_in_next_session(chorus_home: Path, server: FakeOpenAI) -> None:
    server.tool_call("memory", {"action": "add", "target": "user", "content": "Name is Dana"})
    server.reply("Nice to meet you, Dana.")
    first = chat(chorus_home, server, "I'm Dana, please remember me\n/memory\n/quit\n")
    assert first.returncode == 0, first.stderr
    assert "Nice to meet you, Dana." in first.stdout
    assert "console:dana" in first.stdout
    assert "• Name is Dana" in first.stdout
    user_file = ChorusPaths(chorus_home).user_file(UserKey("console", "dana"))
    assert "Name is Dana" in user_file.read_text()

    server.reply("Hello again, Dana!")
    second = chat(chorus_home, server, "hi\n")  # ends with EOF, like Ctrl-D
    assert second.returncode == 0, second.stderr
    assert "Hello again, Dana!" in second.stdout
    turn = next(r for r in server.requests if r["messages"][-1]["content"] == "hi")
    assert "Name is Dana" in turn["messages"][0]["content"]

    sessions = ended_sessions(chorus_home)
    assert len(sessions) == 2
    assert all(s.end_reason == "console_exit" for s in sessions)
    assert "sk-test-key" not in first.stdout + first.stderr + second.stdout + second.stderr


def test_new_command_starts_a_fresh_session(chorus_home: Path, server: FakeOpenAI) -> None:
    server.reply("first answer")
    server.reply("second answer")
    result = chat(chorus_home, server, "one\n/new\ntwo\n/help\n/bogus\n/quit\n")
    assert result.returncode == 0, result.stderr
    assert "Started a new session" in result.stdout
    assert "/memory" in result.stdout  # help text
    assert "Unknown command /bogus" in result.stdout
    second_request = next(r for r in server.requests if r["messages"][-1]["content"] == "two")
    users = [m["content"] for m in second_request["messages"] if m["role"] == "user"]
    assert users == ["two"]
    reasons = sorted(s.end_reason for s in ended_sessions(chorus_home))
    assert reasons == ["console_exit", "new"]


def test_exit_flushes_memories_after_enough_turns(chorus_home: Path, server: FakeOpenAI) -> None:
    server.reply("Noted.")
    server.reply("Sure.")
    server.tool_call("memory", {"action": "add", "target": "user", "content": "Keeps bees"})
    result = chat(
        chorus_home,
        server,
        "I keep bees\nthey are busy\n/quit\n",
        CHORUS_MEMORY__FLUSH_MIN_TURNS="2",
    )
    assert result.returncode == 0, result.stderr
    assert "saving what is worth remembering" in result.stdout
    flushes = [r for r in server.requests if r.get("tools") and len(r["tools"]) == 1]
    assert [t["function"]["name"] for t in flushes[-1]["tools"]] == ["memory"]
    user_file = ChorusPaths(chorus_home).user_file(UserKey("console", "dana"))
    assert "Keeps bees" in user_file.read_text()


def test_llm_down_gets_apology_not_crash(chorus_home: Path, server: FakeOpenAI) -> None:
    server.error(503, times=10)
    result = chat(chorus_home, server, "hello?\n", CHORUS_LLM__MAX_RETRIES="1")
    assert result.returncode == 0, result.stderr
    assert "can't reach my language model" in result.stdout
    assert "Traceback" not in result.stderr


def test_without_endpoint_says_what_to_set(chorus_home: Path) -> None:
    result = subprocess.run(
        [str(CHORUS), "console"],
        input="",
        capture_output=True,
        text=True,
        env=console_env(chorus_home, None),
        timeout=60,
    )
    assert result.returncode == 2
    assert "OPENAI_BASE_URL" in result.stderr
    assert "Traceback" not in result.stderr


def test_ctrl_c_interrupts_the_answer_not_the_program(
    chorus_home: Path, server: FakeOpenAI
) -> None:
    server.hang(60)
    server.reply("still here")
    proc = subprocess.Popen(
        [str(CHORUS), "console"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=console_env(chorus_home, server),
    )
    assert proc.stdin is not None
    proc.stdin.write("tell me a long story\n")
    proc.stdin.flush()
    until_sync(lambda: server.requests, 30, "the console to call the endpoint")
    proc.send_signal(signal.SIGINT)  # what Ctrl-C delivers
    proc.stdin.write("are you still there?\n")
    proc.stdin.flush()
    proc.stdin.close()
    proc.wait(timeout=60)
    assert proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout.read(), proc.stderr.read()
    assert proc.returncode == 0, err
    assert "(stopped)" in out
    assert "still here" in out
    turn = next(
        r for r in server.requests if r["messages"][-1]["content"] == "are you still there?"
    )
    users = [m["content"] for m in turn["messages"] if m["role"] == "user"]
    assert users == ["tell me a long story", "are you still there?"]
    assert json.dumps(turn).count("tell me a long story") == 1


def test_debug_logs_never_contain_the_api_key(chorus_home: Path, server: FakeOpenAI) -> None:
    server.tool_call(
        "memory", {"action": "add", "target": "user", "content": "Uses key sk-test-key"}
    )
    server.reply("noted")
    result = chat(chorus_home, server, "my key is sk-test-key\n/quit\n", CHORUS_LOG_LEVEL="DEBUG")
    assert result.returncode == 0, result.stderr
    assert "DEBUG" in result.stderr  # debug logging really was on
    assert "sk-test-key" not in result.stderr


def test_export_writes_the_archive_under_chorus_home(chorus_home: Path, server: FakeOpenAI) -> None:
    import io
    import zipfile

    server.reply("Noted, the blue door.")
    result = chat(chorus_home, server, "my studio has a blue door\n/export\n/quit\n")
    assert result.returncode == 0, result.stderr
    target = chorus_home / "exports" / "chorus-export-console-dana.zip"
    assert f"saved as {target}" in result.stdout
    assert target.stat().st_mode & 0o077 == 0
    with zipfile.ZipFile(io.BytesIO(target.read_bytes())) as archive:
        assert json.loads(archive.read("manifest.json"))["person"] == "console:dana"
        names = [n for n in archive.namelist() if n.startswith("transcripts/")]
        said = [m["content"] for n in names for m in json.loads(archive.read(n))["messages"]]
    assert "my studio has a blue door" in said

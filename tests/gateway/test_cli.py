"""The ``chorus`` command as an operator runs it: a real process, a temp CHORUS_HOME."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memory.paths import ChorusPaths, UserKey
from memory.store import MemoryStore
from memory.transcripts import SessionDB
from tests.fakes.telegram_api import FakeTelegram

CHORUS = Path(sys.executable).with_name("chorus")


def run(
    home: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
    full_env.update({"CHORUS_HOME": str(home), "COLUMNS": "200"})
    full_env.update(env or {})
    return subprocess.run(
        [str(CHORUS), *args], capture_output=True, text=True, env=full_env, timeout=60
    )


def test_help_lists_commands(chorus_home: Path) -> None:
    result = run(chorus_home, "--help")
    assert result.returncode == 0
    for command in ("memory", "sessions", "doctor"):
        assert command in result.stdout


def git(*args: str) -> subprocess.CompletedProcess[str]:
    root = Path(__file__).resolve().parents[2]
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)


def test_version_is_the_checkouts_release_tag_or_commit(chorus_home: Path) -> None:
    """At a clean vX.Y.Z tag the version is X.Y.Z; anywhere else it names the commit."""
    head = git("rev-parse", "HEAD")
    if head.returncode != 0:
        pytest.skip("not a git checkout")
    result = run(chorus_home, "--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("chorus ")
    shown = result.stdout.split()[1]
    exact = git("describe", "--tags", "--exact-match", "--dirty", "--match", "v[0-9]*")
    if exact.returncode == 0 and not exact.stdout.strip().endswith("-dirty"):
        assert shown == exact.stdout.strip().removeprefix("v")
    else:
        local = shown.partition("+")[2]
        commit = next(part for part in local.split(".") if part.startswith("g"))
        assert head.stdout.strip().startswith(commit[1:]) and len(commit) > 7, shown


def test_doctor_reports_healthy_empty_home(chorus_home: Path) -> None:
    result = run(chorus_home, "doctor")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "FAIL" not in result.stdout
    for check in ("config", "home", "sqlite", "memory", "platforms"):
        assert f"] {check}:" in result.stdout
    assert "FTS5" in result.stdout
    assert "no database yet; created with schema" in result.stdout
    assert not (chorus_home / "state.db").exists()  # a diagnosis creates nothing


def test_doctor_fails_on_bad_config(chorus_home: Path) -> None:
    chorus_home.mkdir(mode=0o700)
    (chorus_home / "config.yaml").write_text("sessions:\n  idle_minutes: soon\n")
    result = run(chorus_home, "doctor")
    assert result.returncode == 1
    assert "[FAIL] config" in result.stdout
    assert "sessions.idle_minutes" in result.stdout


def test_doctor_never_prints_tokens(chorus_home: Path) -> None:
    with FakeTelegram(token="123:secret-token-value") as telegram:
        env = {
            "TELEGRAM_BOT_TOKEN": "123:secret-token-value",
            "CHORUS_TELEGRAM__BASE_URL": telegram.base_url,
        }
        result = run(chorus_home, "doctor", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "telegram" in result.stdout
    assert "@chorus_test_bot" in result.stdout
    assert "secret-token-value" not in result.stdout + result.stderr


def test_bad_config_is_one_line_not_a_traceback(chorus_home: Path) -> None:
    chorus_home.mkdir(mode=0o700)
    (chorus_home / "config.yaml").write_text("memory:\n  user_char_limit: lots\n")
    result = run(chorus_home, "memory", "show")
    assert result.returncode == 2
    assert "memory.user_char_limit" in result.stderr
    assert "Traceback" not in result.stderr


def test_memory_show_empty_and_filled(chorus_home: Path) -> None:
    assert "empty" in run(chorus_home, "memory", "show").stdout
    paths = ChorusPaths(chorus_home)
    alice = UserKey("telegram", "42")
    store = MemoryStore(paths.memory_file, paths.user_file(alice))
    assert store.add("memory", "The office wifi is called Nimbus")["success"]
    assert store.add("user", "Alice prefers short answers")["success"]

    shared = run(chorus_home, "memory", "show")
    assert shared.returncode == 0
    assert "The office wifi is called Nimbus" in shared.stdout
    assert "MEMORY (your personal notes)" in shared.stdout
    assert "Alice" not in shared.stdout

    profile = run(chorus_home, "memory", "show", "--user", "telegram:42")
    assert "Alice prefers short answers" in profile.stdout
    assert "USER PROFILE" in profile.stdout
    assert "chars]" in profile.stdout

    other = run(chorus_home, "memory", "show", "--user", "telegram:43")
    assert "Alice" not in other.stdout
    assert "empty" in other.stdout


def test_memory_show_rejects_bad_user(chorus_home: Path) -> None:
    result = run(chorus_home, "memory", "show", "--user", "nocolon")
    assert result.returncode == 1
    assert "PLATFORM:ID" in result.stderr


@pytest.fixture
def two_users_db(chorus_home: Path) -> Path:
    chorus_home.mkdir(mode=0o700)
    with SessionDB(ChorusPaths(chorus_home).state_db) as db:
        db.create_session("s-alice", platform="telegram", user_key="telegram:1")
        db.append_message("s-alice", "user", "my favourite volcano is Eyjafjallajokull")
        db.create_session("s-bob", platform="discord", user_key="discord:2")
        db.append_message("s-bob", "user", "bob talks about gardening")
        db.end_session("s-bob", "idle")
    return chorus_home


def test_sessions_list(two_users_db: Path) -> None:
    result = run(two_users_db, "sessions", "list")
    assert result.returncode == 0
    assert "s-alice" in result.stdout and "s-bob" in result.stdout
    only_bob = run(two_users_db, "sessions", "list", "--user", "discord:2")
    assert "s-bob" in only_bob.stdout and "s-alice" not in only_bob.stdout
    active = run(two_users_db, "sessions", "list", "--active")
    assert "s-alice" in active.stdout and "s-bob" not in active.stdout


def test_sessions_search_is_scoped(two_users_db: Path) -> None:
    alice = run(two_users_db, "sessions", "search", "volcano", "--user", "telegram:1")
    assert alice.returncode == 0
    assert "s-alice" in alice.stdout
    bob = run(two_users_db, "sessions", "search", "volcano", "--user", "discord:2")
    assert "s-alice" not in bob.stdout
    assert "no matches" in bob.stdout
    hostile = run(two_users_db, "sessions", "search", 'NEAR("x" (', "--user", "telegram:1")
    assert hostile.returncode == 0


def test_sessions_search_requires_user(two_users_db: Path) -> None:
    result = run(two_users_db, "sessions", "search", "volcano")
    assert result.returncode != 0
    assert "--user" in result.stderr


def test_doctor_checks_the_llm_endpoint(chorus_home: Path) -> None:
    from tests.fakes import FakeOpenAI

    with FakeOpenAI() as server:
        ok = run(chorus_home, "doctor", env={"OPENAI_BASE_URL": server.base_url})
    assert ok.returncode == 0, ok.stdout
    assert "[ok  ] llm: reachable" in ok.stdout
    down = run(chorus_home, "doctor", env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert down.returncode == 1
    assert "[FAIL] llm: " in down.stdout

"""Upgrading without side effects, as an operator runs the commands: real processes.

A database of an older schema version (made with the migrations of the version
before) is looked at with ``chorus doctor``, ``chorus sessions list``, ``chorus
migrate --check`` and ``chorus backup``: none of them changes it, so the chorus
still running on it starts again. Only ``chorus migrate`` (and the gateway and
the worker) migrate it.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sqlite3
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from memory.paths import ChorusPaths
from memory.transcripts._schema import MIGRATIONS, SCHEMA_VERSION, apply_schema
from tests.fakes import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram

CHORUS = Path(sys.executable).with_name("chorus")
ROOT = Path(__file__).resolve().parents[2]
OLD = SCHEMA_VERSION - 1


def environment(home: Path, **env: str) -> dict[str, str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
    full.pop("DATABASE_URL", None)
    full.update({"CHORUS_HOME": str(home), "COLUMNS": "250", "PYTHONPATH": str(ROOT), **env})
    return full


def run(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CHORUS), *args],
        capture_output=True,
        text=True,
        env=environment(home, **env),
        timeout=120,
        cwd=ROOT,
    )


def old_home(home: Path) -> Path:
    """A CHORUS_HOME whose state.db has the schema of the version before, with a session."""
    home.mkdir(mode=0o700, exist_ok=True)
    state_db = ChorusPaths(home).state_db
    conn = sqlite3.connect(state_db, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        apply_schema(conn, MIGRATIONS[:OLD])
        conn.execute(
            "INSERT INTO sessions (id, source, platform, user_key, started_at)"
            " VALUES ('s1', 'telegram', 'telegram', 'telegram:1', 1.0)"
        )
    finally:
        conn.close()
    state_db.chmod(0o600)
    return state_db


def version_of(state_db: Path) -> int:
    conn = sqlite3.connect(f"file:{state_db}?mode=ro", uri=True)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_doctor_reports_an_old_schema_and_leaves_it(chorus_home: Path) -> None:
    state_db = old_home(chorus_home)
    before = digest(state_db)
    result = run(chorus_home, "doctor")
    assert f"state.db: schema {OLD}, will be migrated to {SCHEMA_VERSION}" in result.stdout
    assert "[ok  ] sqlite" in result.stdout, result.stdout
    assert version_of(state_db) == OLD
    assert digest(state_db) == before
    assert not list(chorus_home.glob("state.db.v*.bak"))


def test_sessions_list_leaves_an_old_schema(chorus_home: Path) -> None:
    state_db = old_home(chorus_home)
    result = run(chorus_home, "sessions", "list")
    assert result.returncode == 1
    assert f"schema {OLD}, will be migrated to {SCHEMA_VERSION}" in result.stderr
    assert "chorus migrate" in result.stderr
    assert "Traceback" not in result.stderr
    assert version_of(state_db) == OLD


def test_sessions_list_creates_no_database(chorus_home: Path) -> None:
    chorus_home.mkdir(mode=0o700)
    result = run(chorus_home, "sessions", "list")
    assert result.returncode == 0, result.stderr
    assert "no sessions" in result.stdout
    assert not ChorusPaths(chorus_home).state_db.exists()


def test_migrate_check_changes_nothing_and_says_what_it_needs(chorus_home: Path) -> None:
    state_db = old_home(chorus_home)
    before = digest(state_db)
    result = run(chorus_home, "migrate", "--check")
    assert result.returncode == 0, result.stderr
    line = " ".join(result.stdout.split())
    assert f"schema {OLD}, will be migrated to {SCHEMA_VERSION}" in line
    assert f"state.db.v{OLD}.bak" in line
    assert "free on disk" in line and " s" in line
    assert digest(state_db) == before
    assert not list(chorus_home.glob("state.db.v*.bak"))


def test_migrate_migrates(chorus_home: Path) -> None:
    state_db = old_home(chorus_home)
    result = run(chorus_home, "migrate")
    assert result.returncode == 0, result.stderr
    assert f"migrated the database from schema {OLD} to {SCHEMA_VERSION}" in result.stdout
    assert version_of(state_db) == SCHEMA_VERSION
    assert version_of(chorus_home / f"state.db.v{OLD}.bak") == OLD  # the way back
    again = run(chorus_home, "migrate", "--check")
    assert f"schema {SCHEMA_VERSION} is current" in again.stdout
    listed = run(chorus_home, "sessions", "list")
    assert listed.returncode == 0, listed.stderr
    assert "telegram:1" in listed.stdout


def test_a_backup_records_the_databases_schema(chorus_home: Path, tmp_path: Path) -> None:
    state_db = old_home(chorus_home)
    archive = tmp_path / "old.tar.gz"
    result = run(chorus_home, "backup", str(archive))
    assert result.returncode == 0, result.stderr
    assert f"schema version {OLD}" in result.stdout
    with tarfile.open(archive, "r:gz") as tar:
        member = tar.extractfile("chorus-backup.json")
        assert member is not None
        manifest = json.loads(member.read())
    assert manifest["schema_version"] == OLD
    assert version_of(state_db) == OLD


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def gateway_process(
    home: Path, llm: FakeOpenAI, telegram: FakeTelegram, port: int, log: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """``chorus gateway`` on ``home`` (Telegram long polling against the fake), stopped after."""
    env = environment(
        home,
        OPENAI_BASE_URL=llm.base_url,
        OPENAI_API_KEY="sk-test",
        TELEGRAM_BOT_TOKEN=telegram.token,
        CHORUS_TELEGRAM__BASE_URL=telegram.base_url,
        CHORUS_TELEGRAM__BASE_FILE_URL=telegram.base_file_url,
        CHORUS_GATEWAY__HTTP__PORT=str(port),
        CHORUS_LOG_LEVEL="INFO",
    )
    with log.open("ab") as err:
        proc = subprocess.Popen(
            [str(CHORUS), "gateway"], env=env, stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT
        )
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def status(port: int, path: str) -> int | None:
    try:
        return httpx.get(f"http://127.0.0.1:{port}{path}", timeout=2).status_code
    except httpx.HTTPError:
        return None


def wait_for(check: object, within: float, what: str, log: Path) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if callable(check) and check():
            return
        time.sleep(0.1)
    raise AssertionError(f"{what} within {within}s; log:\n{log.read_text(errors='replace')}")


PROCESS_START = 300.0
"""Seconds a started process gets to log a line (a bound, not a wait: it returns
as soon as the line is there, and fails at once if the process ended)."""


def wait_for_line(
    proc: subprocess.Popen[bytes], log: Path, text: str, within: float = PROCESS_START
) -> None:
    deadline = time.monotonic() + within
    while text not in log.read_text(errors="replace"):
        assert proc.poll() is None, f"the process ended; log:\n{log.read_text(errors='replace')}"
        assert time.monotonic() < deadline, f"no {text!r}; log:\n{log.read_text(errors='replace')}"
        time.sleep(0.1)


def test_healthz_answers_while_the_schema_migrates(
    chorus_home: Path, server: FakeOpenAI, tmp_path: Path
) -> None:
    """The migration is held back by a writer that keeps the database locked: the process
    is alive (``/healthz`` 200), not ready (``/readyz`` 503), and goes on once it can."""
    state_db = old_home(chorus_home)
    port = free_port()
    log = tmp_path / "gateway.log"
    blocker = sqlite3.connect(state_db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # the migration waits for this write lock
    with (
        FakeTelegram() as telegram,
        gateway_process(chorus_home, server, telegram, port, log) as gateway,
    ):
        try:
            # the process is up and migrating (however long its start took on a busy
            # machine): from then on /healthz answers while the migration waits
            wait_for_line(gateway, log, "migrating the session database from schema")
            wait_for_line(gateway, log, "HTTP server listening on", within=60)
            wait_for(lambda: status(port, "/healthz") == 200, 10, "/healthz answered", log)
            assert status(port, "/readyz") == 503
            assert version_of(state_db) == OLD
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        wait_for_line(gateway, log, "gateway up:")  # migrated, then started
        wait_for(lambda: status(port, "/readyz") == 200, 30, "the gateway got ready", log)
    assert version_of(state_db) == SCHEMA_VERSION

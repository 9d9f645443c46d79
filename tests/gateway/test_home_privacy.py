"""Everything in CHORUS_HOME is its user's only, and chorus refuses a home others can read."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gateway.access import GatewayDB
from memory.paths import ChorusPaths
from memory.transcripts import SessionDB
from tests.fakes import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram
from tests.gateway.test_cli import run


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_state_db_and_its_wal_are_0600_even_under_a_lax_umask(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        path = ChorusPaths(tmp_path).state_db
        db = SessionDB(path)
        db.create_session("s1", platform="telegram", user_key="telegram:1")
        tables = GatewayDB(path)
        tables.audit("telegram:1", "/admin", "users", "ok", 1.0)
        for name in ("state.db", "state.db-wal", "state.db-shm"):
            assert mode(tmp_path / name) == 0o600, name
        db.close()
        tables.close()
    finally:
        os.umask(previous)


def test_an_existing_readable_database_is_closed_to_others(tmp_path: Path) -> None:
    path = ChorusPaths(tmp_path).state_db
    SessionDB(path).close()
    path.chmod(0o644)
    SessionDB(path).close()
    assert mode(path) == 0o600


def test_files_the_cli_writes_are_private(chorus_home: Path) -> None:
    chorus_home.mkdir(mode=0o700)
    result = run(chorus_home, "users", "allow", "telegram:42")
    assert result.returncode == 0, result.stderr
    for path in chorus_home.rglob("*"):
        if path.is_file():
            assert mode(path) & 0o077 == 0, path


@pytest.mark.parametrize("command", ["gateway", "worker", "console"])
def test_a_home_others_can_read_is_refused_with_the_fix(
    chorus_home: Path, server: FakeOpenAI, command: str
) -> None:
    chorus_home.mkdir(mode=0o755)
    chorus_home.chmod(0o755)
    with FakeTelegram() as telegram:
        env = {
            "OPENAI_BASE_URL": server.base_url,
            "TELEGRAM_BOT_TOKEN": telegram.token,
            "CHORUS_TELEGRAM__BASE_URL": telegram.base_url,
            "CHORUS_REDIS__URL": "redis://127.0.0.1:1/0",
            "CHORUS_GATEWAY__HTTP__PORT": "0",
        }
        result = run(chorus_home, command, env=env)
    assert result.returncode == 2
    assert f"chmod 700 {chorus_home}" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (chorus_home / "state.db").exists()

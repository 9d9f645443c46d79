"""`chorus secrets …`: a person's secrets set by an admin, the value from stdin only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.access import GatewayDB
from memory.database import Location
from memory.paths import ChorusPaths
from memory.secrets import SecretKey, SecretStore

pytest_plugins = ["tests.fakes.postgres_fixtures"]

CHORUS = Path(sys.executable).with_name("chorus")
KEY = "cli-operator-key-0123456789abcdefghijkl"
VALUE = "xoxp-CliSecretValue-77331"


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, chorus_home: Path) -> Location:
    chorus_home.mkdir(mode=0o700, exist_ok=True)
    if request.param == "sqlite":
        return ChorusPaths(chorus_home).state_db
    url: str = request.getfixturevalue("postgres_url")
    return url


def run(
    home: Path, where: Location, *args: str, stdin: str = "", key: str | None = KEY
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
    env.update({"CHORUS_HOME": str(home), "COLUMNS": "200", "CHORUS_LOG_LEVEL": "DEBUG"})
    if key is not None:
        env["CHORUS_SECRET_KEY"] = key
    if isinstance(where, str):
        env["DATABASE_URL"] = where
    return subprocess.run(
        [str(CHORUS), "secrets", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_set_list_delete_from_stdin(chorus_home: Path, where: Location) -> None:
    stored = run(chorus_home, where, "set", "telegram:42", "SLACK_TOKEN", stdin=VALUE + "\n")
    assert stored.returncode == 0, stored.stderr
    assert VALUE not in stored.stdout + stored.stderr  # not even at DEBUG
    with SecretStore(where, SecretKey(KEY)) as store:
        assert store.get("telegram:42", "SLACK_TOKEN") == VALUE

    listed = run(chorus_home, where, "list", "telegram:42")
    assert listed.returncode == 0 and listed.stdout.split() == ["SLACK_TOKEN"]
    assert VALUE not in listed.stdout

    assert run(chorus_home, where, "delete", "telegram:42", "SLACK_TOKEN").returncode == 0
    missing = run(chorus_home, where, "delete", "telegram:42", "SLACK_TOKEN")
    assert missing.returncode == 1 and "no secret named SLACK_TOKEN" in missing.stderr
    with GatewayDB(where) as db:
        audit = [(e.command, e.args) for e in db.audit_entries(10)]
    assert ("secrets set", "telegram:42 SLACK_TOKEN") in audit
    assert ("secrets delete", "telegram:42 SLACK_TOKEN") in audit
    assert all(VALUE not in args for _, args in audit)


def test_refusals_are_one_clear_line(chorus_home: Path) -> None:
    chorus_home.mkdir(mode=0o700)
    where = ChorusPaths(chorus_home).state_db
    no_key = run(chorus_home, where, "set", "telegram:42", "TOKEN", stdin=VALUE, key=None)
    assert no_key.returncode == 2 and "CHORUS_SECRET_KEY is not set" in no_key.stderr
    short = run(chorus_home, where, "set", "telegram:42", "TOKEN", stdin=VALUE, key="short")
    assert short.returncode == 2 and "too short" in short.stderr
    empty = run(chorus_home, where, "set", "telegram:42", "TOKEN", stdin="\n")
    assert empty.returncode == 1 and "nothing was stored" in empty.stderr
    bad = run(chorus_home, where, "set", "telegram:42", "token", stdin=VALUE)
    assert bad.returncode == 1 and "not a secret name" in bad.stderr
    nobody = run(chorus_home, where, "set", "nobody", "TOKEN", stdin=VALUE)
    assert nobody.returncode == 1 and "PLATFORM:ID" in nobody.stderr
    for result in (no_key, short, empty, bad, nobody):
        assert "Traceback" not in result.stderr
    with SecretStore(where, SecretKey(KEY)) as store:
        assert store.names("telegram:42") == []


def test_a_new_key_is_printed(chorus_home: Path) -> None:
    first = run(chorus_home, chorus_home / "state.db", "key", key=None)
    second = run(chorus_home, chorus_home / "state.db", "key", key=None)
    assert first.returncode == 0 and len(first.stdout.strip()) >= 32
    assert first.stdout != second.stdout
    SecretKey(first.stdout)  # a key chorus accepts


def test_migrate_db_takes_the_secrets_along(chorus_home: Path, postgres_url: str) -> None:
    chorus_home.mkdir(mode=0o700)
    sqlite = ChorusPaths(chorus_home).state_db
    assert run(chorus_home, sqlite, "set", "telegram:42", "TOKEN", stdin=VALUE).returncode == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
    env.update({"CHORUS_HOME": str(chorus_home), "COLUMNS": "200"})
    moved = subprocess.run(
        [str(CHORUS), "migrate-db", "--to", postgres_url],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert moved.returncode == 0, moved.stderr
    with SecretStore(postgres_url, SecretKey(KEY)) as store:
        assert store.get("telegram:42", "TOKEN") == VALUE

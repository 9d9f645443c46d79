"""``chorus doctor``'s operations lines, as an operator runs it (a real process): the
version it is, whether a gateway or worker runs on the home, the copy a migration left
to roll back to, and where /metrics and the probes are served."""

from __future__ import annotations

import sqlite3
from importlib.metadata import version
from pathlib import Path

from gateway.cli._running import running
from memory.paths import ChorusPaths
from memory.transcripts._schema import MIGRATIONS, SCHEMA_VERSION, apply_schema
from tests.gateway.test_cli import run


def lines(home: Path, **env: str) -> dict[str, str]:
    result = run(home, "doctor", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    found: dict[str, str] = {}
    for line in result.stdout.splitlines():
        mark, _, rest = line.partition("] ")
        name, _, detail = rest.partition(": ")
        assert mark == "[ok  ", line
        found[name] = detail
    return found


def old_database(path: Path, schema: int) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        apply_schema(conn, MIGRATIONS[:schema])
    finally:
        conn.close()


def test_doctor_names_the_version_and_a_fresh_home_s_state(chorus_home: Path) -> None:
    chorus_home.mkdir(mode=0o700)
    found = lines(chorus_home)
    assert found["version"] == f"chorus {version('chorus')}"
    assert found["running"] == "no chorus gateway or worker runs on this home"
    assert found["rollback"].startswith("no copy left by a migration")
    assert not (chorus_home / "running.lock").exists()  # doctor creates nothing


def test_doctor_sees_a_running_process_and_lets_it_run(chorus_home: Path) -> None:
    with running(chorus_home):  # the lock chorus gateway and chorus worker hold
        found = lines(chorus_home)
        assert found["running"].startswith("a chorus gateway or worker runs on this home")
        assert "stop it before chorus migrate-db" in found["running"]
    assert lines(chorus_home)["running"] == "no chorus gateway or worker runs on this home"


def test_doctor_names_the_copy_a_migration_left(chorus_home: Path) -> None:
    chorus_home.mkdir(mode=0o700)
    state_db = ChorusPaths(chorus_home).state_db
    old_database(state_db, SCHEMA_VERSION - 1)
    migrated = run(chorus_home, "migrate")
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    backup = f"state.db.v{SCHEMA_VERSION - 1}.bak"
    assert (chorus_home / backup).exists()
    found = lines(chorus_home)
    assert found["rollback"].startswith(f"{backup} (schema {SCHEMA_VERSION - 1})")
    assert "delete it once this version runs well" in found["rollback"]
    (chorus_home / backup).unlink()
    assert lines(chorus_home)["rollback"].startswith("no copy left by a migration")


def test_doctor_says_where_metrics_and_probes_are_served(chorus_home: Path) -> None:
    chorus_home.mkdir(mode=0o700)
    shared = lines(chorus_home, CHORUS_GATEWAY__HTTP__PORT="8181")["metrics"]
    assert "on the webhooks' port 8181" in shared and "set gateway.metrics.port" in shared
    own = lines(
        chorus_home, CHORUS_GATEWAY__HTTP__PORT="8181", CHORUS_GATEWAY__METRICS__PORT="9191"
    )["metrics"]
    assert "on 127.0.0.1:9191 (gateway.metrics.port)" in own
    assert "apart from the webhooks' port 8181" in own

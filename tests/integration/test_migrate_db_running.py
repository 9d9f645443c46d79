"""``chorus migrate-db`` beside a running gateway or worker, as real processes: it refuses
(what they write after the copy would stay in SQLite only), and takes its target from
``DATABASE_URL``. Real PostgreSQL, a real ``chorus gateway`` on the fakes, a real
``chorus worker`` on a real Redis."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from memory.transcripts import SessionDB
from tests.fakes import FakeOpenAI, RedisServer
from tests.fakes.telegram_api import FakeTelegram
from tests.integration.test_upgrades import (
    CHORUS,
    ROOT,
    environment,
    free_port,
    gateway_process,
    status,
    wait_for,
)
from tests.integration.test_worker_stop import _log, _start_worker, _wait_for

pytest_plugins = ["tests.fakes.postgres_fixtures", "tests.fakes.redis_fixtures"]


def migrate_db(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CHORUS), "migrate-db", *args],
        capture_output=True,
        text=True,
        env=environment(home, **env),
        timeout=120,
        cwd=ROOT,
    )


def test_migrate_db_refuses_a_running_gateway_and_reads_database_url(
    chorus_home: Path, server: FakeOpenAI, postgres_url: str, tmp_path: Path
) -> None:
    chorus_home.mkdir(mode=0o700)
    log = tmp_path / "gateway.log"
    port = free_port()
    with FakeTelegram() as telegram:
        with gateway_process(chorus_home, server, telegram, port, log) as gateway:
            wait_for(lambda: status(port, "/readyz") == 200, 60, "the gateway got ready", log)
            refused = migrate_db(chorus_home, DATABASE_URL=postgres_url)
            assert refused.returncode == 1, refused.stdout + refused.stderr
            assert f"gateway or worker is running on {chorus_home} (pid {gateway.pid})" in (
                refused.stderr
            )
            assert "Traceback" not in refused.stderr
        with SessionDB(postgres_url) as target:
            assert target.list_sessions() == []  # nothing was copied
        copied = migrate_db(chorus_home, DATABASE_URL=postgres_url)
    assert copied.returncode == 0, copied.stdout + copied.stderr
    assert "Copied" in copied.stdout and "sessions: 0 rows" in copied.stdout


def test_migrate_db_refuses_a_running_worker(
    chorus_home: Path, postgres_url: str, redis_server: RedisServer
) -> None:
    chorus_home.mkdir(mode=0o700)
    worker = _start_worker(chorus_home, redis_server.url)
    try:
        _wait_for("Listening on", chorus_home, worker, timeout=60)
        refused = migrate_db(chorus_home, DATABASE_URL=postgres_url)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert f"gateway or worker is running on {chorus_home} (pid {worker.pid})" in (
            refused.stderr
        )
        assert "Traceback" not in refused.stderr
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=60) == 0, _log(chorus_home)
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(timeout=10)
    with SessionDB(postgres_url) as target:
        assert target.list_sessions() == []  # nothing was copied
    copied = migrate_db(chorus_home, DATABASE_URL=postgres_url)
    assert copied.returncode == 0, copied.stdout + copied.stderr


def test_migrate_db_needs_a_postgres_target(chorus_home: Path) -> None:
    chorus_home.mkdir(mode=0o700)
    result = migrate_db(chorus_home)
    assert result.returncode != 0
    assert "DATABASE_URL" in result.stdout + result.stderr

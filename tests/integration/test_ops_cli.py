"""Operator commands for providers, the queue and the worker, as real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import redis

from memory.jobs import JobSpec, Outbox
from memory.paths import ChorusPaths
from tests.fakes import RedisServer
from tests.integration.recorder_plugin import install_recorder

pytest_plugins = ["tests.fakes.redis_fixtures"]

CHORUS = Path(sys.executable).with_name("chorus")
ROOT = Path(__file__).resolve().parents[2]


def run(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
    full.update({"CHORUS_HOME": str(home), "COLUMNS": "200", "PYTHONPATH": str(ROOT), **env})
    return subprocess.run(
        [str(CHORUS), *args], capture_output=True, text=True, env=full, timeout=120, cwd=ROOT
    )


def test_memory_providers_lists_user_plugin(chorus_home: Path) -> None:
    chorus_home.mkdir(mode=0o700)
    install_recorder(chorus_home)
    result = run(chorus_home, "memory", "providers", CHORUS_MEMORY__PROVIDER="recorder")
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if "recorder" in line)
    assert "Records every call" in line and "user" in line and "yes" in line


def test_memory_providers_reports_missing_configured_one(chorus_home: Path) -> None:
    result = run(chorus_home, "memory", "providers", CHORUS_MEMORY__PROVIDER="nope")
    assert result.returncode == 1
    assert "'nope' is not installed" in result.stdout


def test_worker_needs_redis(chorus_home: Path) -> None:
    result = run(chorus_home, "worker")
    assert result.returncode == 2
    assert "redis.url" in result.stderr


def test_queue_status_in_process(chorus_home: Path) -> None:
    result = run(chorus_home, "queue", "status")
    assert result.returncode == 0, result.stderr
    assert "in-process" in result.stdout


def test_queue_and_doctor_with_redis(chorus_home: Path, redis_server: RedisServer) -> None:
    status = run(chorus_home, "queue", "status", CHORUS_REDIS__URL=redis_server.url)
    assert status.returncode == 0, status.stderr
    assert "redis (reachable)" in status.stdout
    retry = run(chorus_home, "queue", "retry-failed", CHORUS_REDIS__URL=redis_server.url)
    assert "requeued 0" in retry.stdout
    burst = run(chorus_home, "worker", "--burst", CHORUS_REDIS__URL=redis_server.url)
    assert burst.returncode == 0, burst.stdout + burst.stderr
    doctor = run(chorus_home, "doctor", CHORUS_REDIS__URL=redis_server.url)
    assert "[ok  ] redis: reachable" in doctor.stdout


def test_doctor_fails_on_unreachable_redis(chorus_home: Path) -> None:
    url = "redis://:hunter2@127.0.0.1:9/0"
    doctor = run(chorus_home, "doctor", CHORUS_REDIS__URL=url)
    assert doctor.returncode == 1
    assert "[FAIL] redis: unreachable" in doctor.stdout
    assert "hunter2" not in doctor.stdout + doctor.stderr
    status = run(chorus_home, "queue", "status", CHORUS_REDIS__URL=url)
    assert status.returncode == 1
    assert "UNREACHABLE" in status.stdout
    assert "hunter2" not in status.stdout + status.stderr


def test_queue_status_and_doctor_only_look_at_the_outbox(
    chorus_home: Path, redis_server: RedisServer
) -> None:
    """Jobs waiting in the gateway's outbox stay there: only the gateway moves them."""
    chorus_home.mkdir(mode=0o700)
    outbox = Outbox(ChorusPaths(chorus_home).state_db)
    outbox.put(JobSpec("tests.queue_jobs.record", ("x", "s", 1), "s", "waiting-1"))
    outbox.close()
    for args in (("queue", "status"), ("queue", "retry-failed"), ("doctor",)):
        result = run(chorus_home, *args, CHORUS_REDIS__URL=redis_server.url)
        assert "Traceback" not in result.stderr
    status = run(chorus_home, "queue", "status", CHORUS_REDIS__URL=redis_server.url)
    assert "outbox: 1" in status.stdout
    with Outbox(ChorusPaths(chorus_home).state_db) as still:
        assert still.count() == 1
    assert redis.Redis.from_url(redis_server.url).llen("rq:queue:chorus") == 0

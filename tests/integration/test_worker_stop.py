"""``chorus worker`` stops when asked, also while Redis is down or it is starting.

A stop requested during an outage exits at once with 0: a process manager's
SIGTERM must not wait for the kill at the end of its grace period. One that
comes while the worker sets up, before rq's loop runs, is a warm stop too.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.fakes import RedisServer
from tests.replicas.cluster import free_port

pytest_plugins = ["tests.fakes.redis_fixtures"]

CHORUS = Path(sys.executable).with_name("chorus")
ROOT = Path(__file__).resolve().parents[2]
EXIT_BOUND = 20.0
"""Seconds the stopped worker gets to exit (generous; without the fix it never does)."""


def _start_worker(
    home: Path, url: str, *args: str, metrics_port: int | None = None
) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
    env.update(
        {
            "CHORUS_HOME": str(home),
            "CHORUS_REDIS__URL": url,
            "CHORUS_LOG_LEVEL": "INFO",
            "PYTHONPATH": str(ROOT),
        }
    )
    if metrics_port is not None:
        env["CHORUS_WORKER__METRICS__PORT"] = str(metrics_port)
    log = (home / "worker.log").open("wb")
    proc = subprocess.Popen(
        [str(CHORUS), "worker", *args],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log.close()
    return proc


def _log(home: Path) -> str:
    return (home / "worker.log").read_text(errors="replace")


def _wait_for(condition: str, home: Path, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while condition not in _log(home):
        assert proc.poll() is None, f"the worker exited early:\n{_log(home)}"
        assert time.monotonic() < deadline, f"no {condition!r} in the worker's log:\n{_log(home)}"
        time.sleep(0.1)


def _stop(proc: subprocess.Popen[bytes], home: Path) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=EXIT_BOUND)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        raise AssertionError(f"SIGTERM did not stop the worker:\n{_log(home)}") from None


def test_sigterm_while_redis_is_down_stops_the_worker_with_0(
    chorus_home: Path, redis_server: RedisServer
) -> None:
    chorus_home.mkdir(mode=0o700)
    proc = _start_worker(chorus_home, redis_server.url)
    try:
        _wait_for("Listening on", chorus_home, proc, timeout=60)
        redis_server.stop()
        _wait_for("could not connect to Redis", chorus_home, proc, timeout=30)
        assert _stop(proc, chorus_home) == 0, _log(chorus_home)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    assert "Traceback" not in _log(chorus_home)


def test_sigterm_before_redis_ever_answered_stops_the_worker_with_0(
    chorus_home: Path, redis_server: RedisServer
) -> None:
    chorus_home.mkdir(mode=0o700)
    redis_server.stop()  # never reachable while this worker runs
    proc = _start_worker(chorus_home, redis_server.url)
    try:
        _wait_for("restarting when Redis answers", chorus_home, proc, timeout=60)
        assert _stop(proc, chorus_home) == 0, _log(chorus_home)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_sigterm_while_the_worker_sets_up_is_a_warm_stop(
    chorus_home: Path, redis_server: RedisServer
) -> None:
    """The health listener opens before the worker's loop runs (rq installs its signal
    handlers only then): a SIGTERM the moment it listens still stops it warmly."""
    chorus_home.mkdir(mode=0o700)
    port = free_port()
    proc = _start_worker(chorus_home, redis_server.url, metrics_port=port)
    try:
        deadline = time.monotonic() + 60
        while not _listening(port):
            assert proc.poll() is None, f"the worker exited early:\n{_log(chorus_home)}"
            assert time.monotonic() < deadline, f"no health listener:\n{_log(chorus_home)}"
        assert _stop(proc, chorus_home) == 0, _log(chorus_home)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    log = _log(chorus_home)
    assert "Traceback" not in log

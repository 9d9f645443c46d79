"""``chorus worker`` with ``worker.metrics.port``: a real worker process on a real
redis-server serves ``/metrics`` (process, Python, build, its jobs by kind and
outcome, the queue's depth) and ``/healthz`` (503 once Redis is gone)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from importlib.metadata import version
from pathlib import Path

from memory.jobs import JobSpec, Outbox, RQQueue
from tests.fakes import RedisServer
from tests.replicas.cluster import free_port
from tests.scrape import samples, value

pytest_plugins = ["tests.fakes.redis_fixtures"]

CHORUS = Path(sys.executable).with_name("chorus")
ROOT = Path(__file__).resolve().parents[2]


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read().decode()


def start_worker(home: Path, url: str, port: int, *args: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
    env.update(
        {
            "CHORUS_HOME": str(home),
            "CHORUS_REDIS__URL": url,
            "CHORUS_WORKER__METRICS__PORT": str(port),
            "CHORUS_LOG_LEVEL": "INFO",
            "PYTHONPATH": str(ROOT),
        }
    )
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


def worker_log(home: Path) -> str:
    return (home / "worker.log").read_text(errors="replace")


def wait_for(condition: object, home: Path, proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():  # type: ignore[operator]
        assert proc.poll() is None, f"the worker exited:\n{worker_log(home)}"
        assert time.monotonic() < deadline, f"no {what}:\n{worker_log(home)}"
        time.sleep(0.1)


def stop(proc: subprocess.Popen[bytes], home: Path) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    assert proc.returncode == 0, worker_log(home)


def test_a_worker_exports_its_jobs_queue_and_process(
    chorus_home: Path, redis_server: RedisServer, tmp_path: Path
) -> None:
    chorus_home.mkdir(mode=0o700)
    port = free_port()
    proc = start_worker(chorus_home, redis_server.url, port, "--concurrency", "2")
    metrics = f"http://127.0.0.1:{port}/metrics"
    try:
        wait_for(
            lambda: _answers(f"http://127.0.0.1:{port}/healthz") == 200, chorus_home, proc, "health"
        )
        status, text = get(metrics)
        assert status == 200
        found = samples(text)
        for name in (
            "process_resident_memory_bytes",
            "process_cpu_seconds_total",
            "process_open_fds",
            "process_start_time_seconds",
            "python_gc_objects_collected_total",
        ):
            assert any(key[0] == name for key in found), name
        assert any(key[0] == "python_info" for key in found)
        assert value(found, "chorus_build_info", version=version("chorus")) == 1.0
        for kind in ("sync_turn", "end_session", "rewind"):  # known kinds start at 0
            for outcome in ("done", "retried", "failed"):
                assert value(found, "chorus_worker_jobs_total", kind=kind, outcome=outcome) == 0
        assert value(found, "chorus_queue_depth") == 0
        assert value(found, "chorus_worker_healthy") == 1
        assert not [key for key in found if key[0].endswith("_created")]

        queue = RQQueue(
            redis_server.url, outbox=Outbox(tmp_path / "outbox.db"), retries=1, retry_intervals=[0]
        )
        try:
            queue.enqueue(JobSpec("agent.jobs.sync_turn", ("s-unknown", 1), "s-unknown", "job-1"))
            fails = (str(tmp_path / "fails.log"), "k", 5)
            queue.enqueue(JobSpec("tests.queue_jobs.fail_times", fails, "s-other", "job-2"))

            def counted() -> bool:
                now = samples(get(metrics)[1])
                return (
                    value(now, "chorus_worker_jobs_total", kind="sync_turn", outcome="done") == 1
                    and (
                        "chorus_worker_jobs_total",
                        (("kind", "fail_times"), ("outcome", "failed")),
                    )
                    in now
                )

            wait_for(counted, chorus_home, proc, "jobs counted")
        finally:
            queue.close()
        found = samples(get(metrics)[1])
        assert value(found, "chorus_worker_jobs_total", kind="fail_times", outcome="retried") == 1
        assert value(found, "chorus_worker_jobs_total", kind="fail_times", outcome="failed") == 1
        assert value(found, "chorus_worker_job_seconds_count", kind="sync_turn") == 1
        assert value(found, "chorus_worker_job_seconds_count", kind="fail_times") == 2
        assert value(found, "chorus_failed_jobs") == 1
    finally:
        stop(proc, chorus_home)


def _answers(url: str) -> int:
    try:
        return get(url)[0]
    except OSError:
        return 0


def test_the_worker_is_unhealthy_while_redis_is_gone(
    chorus_home: Path, redis_server: RedisServer
) -> None:
    chorus_home.mkdir(mode=0o700)
    port = free_port()
    health = f"http://127.0.0.1:{port}/healthz"
    proc = start_worker(chorus_home, redis_server.url, port)
    try:
        wait_for(lambda: _answers(health) == 200, chorus_home, proc, "a healthy worker")
        redis_server.stop()
        wait_for(lambda: _answers(health) == 503, chorus_home, proc, "an unhealthy worker")
        status, text = get(f"http://127.0.0.1:{port}/metrics")
        assert status == 200  # the process and the jobs' counters, without Redis's numbers
        found = samples(text)
        assert value(found, "chorus_worker_healthy") == 0
        assert not any(key[0] == "chorus_queue_depth" for key in found)
        redis_server.start()
        wait_for(lambda: _answers(health) == 200, chorus_home, proc, "health back with Redis")
    finally:
        stop(proc, chorus_home)
    assert "Traceback" not in worker_log(chorus_home)


def test_a_taken_metrics_port_is_one_clear_line_and_exit_2(
    chorus_home: Path, redis_server: RedisServer
) -> None:
    chorus_home.mkdir(mode=0o700)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = start_worker(chorus_home, redis_server.url, port)
        assert proc.wait(timeout=60) == 2
    log = worker_log(chorus_home)
    assert f"worker.metrics.port: cannot listen on 127.0.0.1:{port}" in log
    assert "Traceback" not in log

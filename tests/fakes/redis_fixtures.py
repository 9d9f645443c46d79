"""Pytest fixtures around ``RedisServer`` and rq worker subprocesses.

Load them in a test module with ``pytest_plugins = ["tests.fakes.redis_fixtures"]``.
Tests that need Redis fail, never skip, when ``redis-server`` is missing: CI
installs it, and a silently skipped queue test would hide a broken backend.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from rq import SimpleWorker

from .redis_server import RedisServer, redis_server_binary

__all__ = ["WorkerProcesses", "burst_worker", "redis_server", "rq_workers", "run_burst_worker"]

ROOT = Path(__file__).resolve().parents[2]

WORKER_CODE = """
import logging, sys
from pathlib import Path
from memory.jobs import JobLedger, Outbox
from memory.jobs import RQQueue
logging.basicConfig(level=logging.INFO)
url, name, outbox, burst, concurrency, ttl, ledger, lease_ttl, reconcile = sys.argv[1:10]
queue = RQQueue(
    url, outbox=Outbox(Path(outbox)), queue_name=name,
    ledger=JobLedger(Path(ledger)) if ledger else None,
    lease_ttl=float(lease_ttl), reconcile_every=float(reconcile),
)
queue.run_worker(burst=burst == "1", concurrency=int(concurrency), liveness_ttl=float(ttl))
"""
"""A ``chorus worker`` stand-in: ``RQQueue.run_worker`` in a fresh interpreter (with the
job ledger in ``ledger``, when given)."""


def run_burst_worker(url: str, queue_name: str = "chorus") -> None:
    """An rq ``SimpleWorker`` in this process that works until the queue is empty."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        worker = SimpleWorker([queue_name], connection=redis.Redis.from_url(url))
        worker.work(burst=True, with_scheduler=True)
    finally:  # rq installs its own handlers; give pytest its own back
        for sig, handler in saved.items():
            signal.signal(sig, handler)


class WorkerProcesses:
    """rq workers in subprocesses (each in its own session), stopped at teardown."""

    def __init__(self, tmp_dir: Path) -> None:
        self._dir = tmp_dir
        self._dir.mkdir(parents=True, exist_ok=True)
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(
        self,
        url: str,
        queue_name: str = "chorus",
        *,
        burst: bool = False,
        concurrency: int = 1,
        liveness_ttl: float = 2.0,
        ledger: Path | None = None,
        lease_ttl: float = 60.0,
        reconcile_every: float = 30.0,
    ) -> subprocess.Popen[bytes]:
        n = len(self.procs)
        log = (self._dir / f"worker-{n}.log").open("wb")
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        args = [
            url,
            queue_name,
            str(self._dir / f"outbox-{n}.db"),
            "1" if burst else "0",
            str(concurrency),
            str(liveness_ttl),
            str(ledger or ""),
            str(lease_ttl),
            str(reconcile_every),
        ]
        proc = subprocess.Popen(
            [sys.executable, "-c", WORKER_CODE, *args],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.procs.append(proc)
        return proc

    def terminate(self, proc: subprocess.Popen[bytes], timeout: float = 15.0) -> int:
        """SIGTERM (warm shutdown) to the worker, SIGKILL to its group if it lingers."""
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill(proc)
        self._kill_group(proc)
        return proc.wait()

    def kill(self, proc: subprocess.Popen[bytes]) -> None:
        """SIGKILL the worker's process group (worker and scheduler; not its work horse)."""
        self._kill_group(proc)
        proc.wait(timeout=10)

    def log(self, proc: subprocess.Popen[bytes]) -> str:
        n = self.procs.index(proc)
        return (self._dir / f"worker-{n}.log").read_text(errors="replace")

    def stop_all(self) -> None:
        for proc in self.procs:
            self.terminate(proc, timeout=5.0)

    @staticmethod
    def _kill_group(proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A fresh, empty redis-server for one test, stopped afterwards."""
    if redis_server_binary() is None:
        pytest.fail(
            "redis-server is required for this test and was not found on PATH "
            "(install it, e.g. `apt-get install redis-server`)",
            pytrace=False,
        )
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def rq_workers(tmp_path: Path) -> Iterator[WorkerProcesses]:
    """Start rq worker subprocesses with ``rq_workers.start(url)``; all stop at teardown."""
    workers = WorkerProcesses(tmp_path / "workers")
    try:
        yield workers
    finally:
        workers.stop_all()


@pytest.fixture
def burst_worker(redis_server: RedisServer) -> Callable[[], None]:
    """Run an in-process rq worker on ``redis_server`` until its queue is empty."""
    return lambda: run_burst_worker(redis_server.url)

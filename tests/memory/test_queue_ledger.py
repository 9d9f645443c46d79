"""The job ledger against a real redis-server and real worker processes.

The database is the truth, Redis the transport: Redis restarted empty loses no
job, and a worker paused mid-job (SIGSTOP) and resumed after its lease moved on
commits nothing. Workers are ``RQQueue.run_worker`` in subprocesses
(``rq_workers``); every wait is a bounded poll, nothing asserts on wall-clock time.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from memory.jobs import JobLedger, JobSpec, JobState, Outbox, RQQueue
from tests.queue_jobs import read_records
from tests.waiting import until_sync

if TYPE_CHECKING:
    from tests.fakes.redis_fixtures import WorkerProcesses
    from tests.fakes.redis_server import RedisServer

pytest_plugins = ["tests.fakes.redis_fixtures"]


def spec(func: str, *args: Any, session: str, job_id: str) -> JobSpec:
    return JobSpec(f"tests.queue_jobs.{func}", args, session, job_id)


@pytest.fixture
def state_db(tmp_path: Path) -> Path:
    return tmp_path / "state.db"


@pytest.fixture
def queue(redis_server: RedisServer, state_db: Path) -> Iterator[RQQueue]:
    rq = RQQueue(
        redis_server.url,
        outbox=Outbox(state_db),
        ledger=JobLedger(state_db),
        retry_intervals=(0,),
        socket_timeout=1.0,
    )
    yield rq
    rq.close(timeout=5.0)


def by_session(records: list[dict[str, Any]]) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for entry in records:
        found.setdefault(entry["session"], []).append(entry["n"])
    return found


def test_redis_restarted_empty_before_the_jobs_ran_loses_none_of_them(
    queue: RQQueue,
    redis_server: RedisServer,
    rq_workers: WorkerProcesses,
    state_db: Path,
    tmp_path: Path,
) -> None:
    """12 jobs of 3 sessions in Redis, none run, then Redis restarts empty (0 of 12 left in
    it): the worker sends the 12 again from the ledger, and each runs once, in its order."""
    records = str(tmp_path / "records")
    for n in range(4):
        for s in ("a", "b", "c"):
            queue.enqueue(spec("record", records, s, n, session=s, job_id=f"{s}-{n}"))
    assert queue.status().queued == 3  # one per session; the others wait for it
    redis_server.stop()
    redis_server.start()
    assert queue.status().queued == 0  # what Redis held is gone

    rq_workers.start(redis_server.url, ledger=state_db, reconcile_every=0.5)
    until_sync(lambda: len(read_records(records)) >= 12, 60, "the 12 jobs")
    assert by_session(read_records(records)) == {s: [0, 1, 2, 3] for s in ("a", "b", "c")}
    until_sync(lambda: JobLedger(state_db).count("done") == 12, 30, "the ledger")


def test_redis_restarted_empty_while_a_job_runs_loses_none_of_the_rest(
    queue: RQQueue,
    redis_server: RedisServer,
    rq_workers: WorkerProcesses,
    state_db: Path,
    tmp_path: Path,
) -> None:
    """Redis restarts empty while the first of a session's 4 jobs runs (3 waiting ones lost
    from Redis): the running job finishes once, the 3 others run once each, in order."""
    records, marker = str(tmp_path / "records"), tmp_path / "marker"
    queue.enqueue(spec("block_then_record", records, str(marker), 0, session="s", job_id="s-0"))
    for n in range(1, 4):
        queue.enqueue(spec("record", records, "s", n, session="s", job_id=f"s-{n}"))
    rq_workers.start(redis_server.url, ledger=state_db, reconcile_every=0.5)
    until_sync(marker.exists, 30, "the first job to start")
    redis_server.stop()
    redis_server.start()
    Path(f"{marker}.release").touch()

    until_sync(lambda: len(read_records(records)) >= 4, 60, "the 4 jobs")
    assert [(r["session"], r["n"]) for r in read_records(records)] == [
        ("blocked", 0),
        ("s", 1),
        ("s", 2),
        ("s", 3),
    ]
    until_sync(lambda: JobLedger(state_db).count("done") == 4, 30, "the ledger")


def test_a_worker_paused_past_its_lease_cannot_commit_when_it_resumes(
    queue: RQQueue,
    redis_server: RedisServer,
    rq_workers: WorkerProcesses,
    state_db: Path,
    tmp_path: Path,
) -> None:
    """SIGSTOP of the worker running s-1 past its lease: another worker runs s-1 (1 commit)
    and then s-2; SIGCONT of the paused one: its late run commits nothing (0 of 1)."""
    records, marker = str(tmp_path / "records"), tmp_path / "marker"
    key = "step:s-1"
    queue.enqueue(
        spec("block_then_mark", records, str(marker), str(state_db), key, 1, session="s",
             job_id="s-1")
    )  # fmt: skip
    queue.enqueue(spec("record", records, "s", 2, session="s", job_id="s-2"))
    options: dict[str, Any] = {"ledger": state_db, "liveness_ttl": 1.0, "lease_ttl": 1.0}
    paused = rq_workers.start(redis_server.url, **options)
    until_sync(lambda: marker.exists() and marker.read_text() != "", 30, "s-1 to start")
    assert int(marker.read_text()) == paused.pid
    os.kill(paused.pid, signal.SIGSTOP)
    try:
        Path(f"{marker}.release").touch()  # only the other worker can go on now
        other = rq_workers.start(redis_server.url, **options)
        until_sync(lambda: len(read_records(records)) >= 2, 60, "s-1 and s-2 on the other")
        assert [(r["session"], r["n"], r["pid"]) for r in read_records(records)] == [
            ("blocked", 1, other.pid),
            ("s", 2, other.pid),
        ]
    finally:
        os.kill(paused.pid, signal.SIGCONT)
    until_sync(lambda: "lost the lease" in rq_workers.log(paused), 30, "the paused run to end")
    assert len(read_records(records)) == 2  # the resumed run committed nothing
    assert JobState(state_db).is_done(key)
    assert JobLedger(state_db).state_of("s-1") == "done"

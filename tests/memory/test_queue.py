"""The background queue: the same behaviour on both backends, plus the outbox and helpers.

Every behaviour test runs twice: on ``InProcessQueue`` and on ``RQQueue`` against
a real redis-server (jobs run by an in-process ``SimpleWorker``, or by two
worker subprocesses where concurrency matters).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import redis
from rq import Worker

from memory.database import Location
from memory.jobs import (
    BackgroundQueue,
    InProcessQueue,
    JobSpec,
    Outbox,
    OutboxRelay,
    RQQueue,
    mask_url,
)
from tests.queue_jobs import read_records, runs_of
from tests.waiting import until_sync

if TYPE_CHECKING:
    from tests.fakes.redis_fixtures import WorkerProcesses
    from tests.fakes.redis_server import RedisServer

pytest_plugins = ["tests.fakes.redis_fixtures", "tests.fakes.tables_backends"]

RETRIES = 2
QUEUE_NAME = "chorus"


def wait_for(predicate: Callable[[], bool], timeout: float = 20.0, what: str = "") -> None:
    until_sync(predicate, timeout, what)


def spec(func: str, *args: Any, session: str, job_id: str) -> JobSpec:
    return JobSpec(f"tests.queue_jobs.{func}", args, session, job_id)


@dataclass
class Harness:
    kind: str
    queue: BackgroundQueue
    tmp: Path
    server: RedisServer | None = None
    burst_worker: Callable[[], None] | None = None
    sleeps: list[float] = field(default_factory=list)

    @property
    def records(self) -> str:
        return str(self.tmp / "records.jsonl")

    def run_until_idle(self, timeout: float = 20.0) -> None:
        """In-process: the flush barrier. rq: burst workers until nothing waits."""
        if self.burst_worker is None:
            assert self.queue.flush(timeout)
            return
        deadline = time.monotonic() + timeout
        while True:
            self.burst_worker()
            s = self.queue.status()
            if s.queued == s.started == s.deferred == s.scheduled == 0:
                return
            assert time.monotonic() < deadline, s
            time.sleep(0.05)


@pytest.fixture(params=["in-process", "redis"])
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    sleeps: list[float] = []
    queue: BackgroundQueue
    if request.param == "in-process":
        queue = InProcessQueue(retries=RETRIES, sleep=sleeps.append)
        h = Harness("in-process", queue, tmp_path, sleeps=sleeps)
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        outbox = Outbox(tmp_path / "state.db")
        queue = RQQueue(server.url, outbox=outbox, retries=RETRIES, retry_intervals=(0,))
        h = Harness("redis", queue, tmp_path, server, request.getfixturevalue("burst_worker"))
    yield h
    queue.close(timeout=5.0)


# -- behaviour on both backends -----------------------------------------------------------


def test_jobs_run(harness: Harness) -> None:
    for n in range(3):
        harness.queue.enqueue(spec("record", harness.records, "s", n, session="s", job_id=f"j{n}"))
    harness.run_until_idle()
    assert [r["n"] for r in read_records(harness.records)] == [0, 1, 2]


def test_each_session_runs_in_order(harness: Harness, request: pytest.FixtureRequest) -> None:
    worker_pids: set[int] = set()
    if harness.server is not None:
        workers: WorkerProcesses = request.getfixturevalue("rq_workers")
        worker_pids = {workers.start(harness.server.url).pid for _ in range(2)}
        conn = redis.Redis.from_url(harness.server.url)
        wait_for(lambda: Worker.count(connection=conn) == 2, what="two rq workers")
    sessions, per_session = 20, 5
    for n in range(per_session):
        for s in range(sessions):
            job = spec(
                "record", harness.records, f"s{s}", n, 0.005, session=f"s{s}", job_id=f"{s}-{n}"
            )
            harness.queue.enqueue(job)
    if harness.server is None:
        harness.run_until_idle()
    else:
        wait_for(lambda: len(read_records(harness.records)) == sessions * per_session, 30.0)
    records = read_records(harness.records)
    assert len(records) == sessions * per_session
    for s in range(sessions):
        assert [r["n"] for r in records if r["session"] == f"s{s}"] == list(range(per_session))
    if worker_pids:
        assert {r["pid"] for r in records} == worker_pids  # both workers took jobs


def test_failing_job_is_retried_then_succeeds(harness: Harness) -> None:
    harness.queue.enqueue(
        spec("fail_times", harness.records, "k", RETRIES, session="s", job_id="f")
    )
    harness.run_until_idle()
    assert runs_of(harness.records, "k") == RETRIES + 1
    assert [r["key"] for r in read_records(harness.records)] == ["k"]
    assert harness.queue.status().failed == 0
    if harness.kind == "in-process":
        assert harness.sleeps == [1.0, 5.0]  # backoff[i] before retry i, growing


def test_exhausted_retries_land_in_failed_and_can_be_retried(harness: Harness) -> None:
    times = RETRIES + 1  # fails every run it gets, then succeeds on the next
    harness.queue.enqueue(spec("fail_times", harness.records, "k", times, session="s7", job_id="f"))
    harness.run_until_idle()
    status = harness.queue.status()
    assert status.failed == 1
    [failed] = status.failed_jobs
    assert (failed.job_id, failed.func, failed.session_id) == (
        "f",
        "tests.queue_jobs.fail_times",
        "s7",
    )
    assert failed.error == f"RuntimeError: planned failure {times} of {times}"
    assert failed.failed_at is not None
    assert read_records(harness.records) == []

    assert harness.queue.retry_failed() == 1
    harness.run_until_idle()
    assert [r["key"] for r in read_records(harness.records)] == ["k"]
    assert harness.queue.status().failed == 0


@pytest.mark.parametrize("second_enqueued", ["while-first-waits", "after-first-failed"])
def test_failed_job_does_not_block_its_session(harness: Harness, second_enqueued: str) -> None:
    first = spec("fail_times", harness.records, "bad", 99, "s", 1, session="s", job_id="s-1")
    second = spec("record", harness.records, "s", 2, session="s", job_id="s-2")
    harness.queue.enqueue(first)
    if second_enqueued == "after-first-failed":
        harness.run_until_idle()
        assert harness.queue.status().failed == 1
    harness.queue.enqueue(second)
    harness.run_until_idle()
    assert [(r["session"], r["n"]) for r in read_records(harness.records)] == [("s", 2)]
    assert harness.queue.status().failed == 1


def test_duplicate_enqueue_is_harmless(harness: Harness) -> None:
    marker = harness.tmp / "marker"
    harness.queue.enqueue(
        spec("block_then_record", harness.records, str(marker), 0, session="b", job_id="b")
    )
    dup = spec("record", harness.records, "s", 1, session="s", job_id="dup")
    harness.queue.enqueue(dup)
    harness.queue.enqueue(dup)  # still waiting: ignored
    Path(f"{marker}.release").touch()
    harness.run_until_idle()
    assert sorted(r["key"] for r in read_records(harness.records)) == ["blocked:0", "s:1"]

    harness.queue.enqueue(dup)  # finished already: runs again, so jobs must be idempotent
    harness.run_until_idle()
    assert [r["key"] for r in read_records(harness.records)].count("s:1") == 2


# -- in-process only ----------------------------------------------------------------------


def test_in_process_flush_is_a_barrier_and_times_out(tmp_path: Path) -> None:
    queue = InProcessQueue()
    marker = tmp_path / "marker"
    queue.enqueue(
        spec("block_then_record", str(tmp_path / "r"), str(marker), 0, session="s", job_id="b")
    )
    wait_for(marker.exists)
    assert queue.status().started == 1
    assert queue.flush(timeout=0.05) is False
    Path(f"{marker}.release").touch()
    assert queue.flush(timeout=20) is True
    assert len(read_records(tmp_path / "r")) == 1
    queue.close()


def test_in_process_close_drains_then_drops_later_jobs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    queue = InProcessQueue()
    records = str(tmp_path / "r")
    for n in range(3):
        queue.enqueue(spec("record", records, "s", n, session="s", job_id=f"j{n}"))
    queue.close(timeout=20)
    assert len(read_records(records)) == 3
    with caplog.at_level(logging.ERROR, logger="memory.jobs"):
        queue.enqueue(spec("record", records, "s", 9, session="s", job_id="late"))
    assert "dropped" in caplog.text
    assert len(read_records(records)) == 3


def test_in_process_uses_the_injected_resolver() -> None:
    calls: list[tuple[Any, ...]] = []
    queue = InProcessQueue(resolve=lambda path: lambda *args: calls.append((path, *args)))
    queue.enqueue(JobSpec("x.y", (1, "a"), "s", "j"))
    assert queue.flush(timeout=20)
    assert calls == [("x.y", 1, "a")]
    queue.close()


# -- outbox, job specs, helpers -----------------------------------------------------------


def test_outbox_is_a_durable_fifo_next_to_other_tables(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE sessions (id TEXT)")
        conn.execute("INSERT INTO sessions VALUES ('kept')")
    jobs = [
        JobSpec("a.b", (n, "x", None, [1, 2], {"k": True}), f"s{n}", f"j{n}", "d") for n in range(3)
    ]
    outbox = Outbox(db)
    ids = [outbox.put(job) for job in jobs]
    assert ids == sorted(ids)
    outbox.close()

    reopened = Outbox(db)
    assert reopened.count() == 3
    assert [job for _, job in reopened.pending()] == jobs
    reopened.delete(ids[0])
    assert [job.job_id for _, job in reopened.pending(limit=1)] == ["j1"]
    assert reopened.count() == 2
    assert reopened.path == db
    reopened.close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT id FROM sessions").fetchall() == [("kept",)]
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_outbox_is_a_fifo_whose_ids_give_the_order(where: Location) -> None:
    jobs = [
        JobSpec("a.b", (n, "x", None, [1, 2], {"k": True}), f"s{n}", f"j{n}", "d") for n in range(5)
    ]
    with Outbox(where) as outbox:
        ids = [outbox.put(job) for job in jobs[:3]]
        outbox.delete(ids[1])
        outbox.delete(10_000)  # unknown: ignored
        ids += [outbox.put(job) for job in jobs[3:]]
        assert ids == sorted(ids) and len(set(ids)) == 5
        assert outbox.location == where
    with Outbox(where) as reopened:
        assert reopened.count() == 4
        pending = reopened.pending()
        assert [row_id for row_id, _ in pending] == [ids[0], ids[2], ids[3], ids[4]]
        assert [job for _, job in pending] == [jobs[0], jobs[2], jobs[3], jobs[4]]
        assert [job.job_id for _, job in reopened.pending(limit=2)] == ["j0", "j2"]
        assert reopened.pending(limit=0) == []


def test_outbox_relay_parks_jobs_and_sends_them_in_order(where: Location) -> None:
    sent: list[str] = []
    down = True

    def submit(job: JobSpec) -> None:
        if down:
            raise ConnectionError("refused")
        sent.append(job.job_id)

    relay = OutboxRelay(
        Outbox(where), submit, errors=(ConnectionError,), target="redis", reconnect_delay=0.0
    )
    for n in range(3):
        relay.send(JobSpec("a.b", (n,), "s", f"j{n}"))
    assert (relay.reachable, relay.pending(), sent) == (False, 3, [])
    down = False
    relay.send(JobSpec("a.b", (3,), "s", "j3"))  # drains the older ones first
    assert (relay.reachable, relay.pending(), sent) == (True, 0, ["j0", "j1", "j2", "j3"])
    relay.close()


def test_two_replicas_share_one_outbox(postgres_url: str) -> None:
    with Outbox(postgres_url) as first, Outbox(postgres_url) as second:
        a = first.put(JobSpec("a.b", (1,), "s", "from-first"))
        b = second.put(JobSpec("a.b", (2,), "s", "from-second"))
        assert a < b
        assert [(row_id, job.job_id) for row_id, job in first.pending()] == [
            (a, "from-first"),
            (b, "from-second"),
        ]
        first.delete(b)
        assert second.count() == 1
        assert [job.job_id for _, job in second.pending()] == ["from-first"]


def test_outbox_is_thread_safe(where: Location) -> None:
    outbox = Outbox(where)

    def put_many(t: int) -> None:
        for n in range(50):
            outbox.put(JobSpec("a.b", (t, n), f"s{t}", f"{t}-{n}"))

    threads = [threading.Thread(target=put_many, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    pending = outbox.pending()
    assert len(pending) == outbox.count() == 200
    for t in range(4):  # each thread's rows keep their order
        assert [job.args[1] for _, job in pending if job.args[0] == t] == list(range(50))
    outbox.close()


def test_job_spec_takes_plain_values_only() -> None:
    assert JobSpec("a.b", [1, 2], "s", "j").args == (1, 2)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="JSON"):
        JobSpec("a.b", (object(),), "s", "j")
    with pytest.raises(ValueError, match="dotted"):
        JobSpec("nodots", (), "s", "j")
    with pytest.raises(ValueError):
        JobSpec("a.b", (), "", "j")


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("redis://:s3cret@host:6379/0", "redis://:***@host:6379/0"),
        ("redis://user:s3cret@host:6379/0", "redis://user:***@host:6379/0"),
        ("rediss://u:p%40ss@host/1", "rediss://u:***@host/1"),
        ("redis://host:6379/0", "redis://host:6379/0"),
        ("unix:///tmp/r.sock?db=0&password=s3cret", "unix:///tmp/r.sock?db=0&password=***"),
    ],
)
def test_mask_url(url: str, masked: str) -> None:
    assert mask_url(url) == masked

"""RQQueue against a real redis-server: dead workers, warm shutdown, outages, the outbox.

Workers are real: ``RQQueue.run_worker`` in subprocesses (``rq_workers``) or an
rq ``SimpleWorker`` in this process (``burst_worker``). Every wait is a bounded
poll; nothing asserts on wall-clock time.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import pytest
import redis
from rq import Queue, Worker
from rq.executions import prepare_execution
from rq.job import Job

from memory.jobs import JobSpec, Outbox, RQQueue
from memory.jobs._rq_worker import ChorusWorker, liveness_key
from tests.queue_jobs import read_records
from tests.waiting import until_sync

if TYPE_CHECKING:
    from tests.fakes.redis_fixtures import WorkerProcesses
    from tests.fakes.redis_server import RedisServer

pytest_plugins = ["tests.fakes.redis_fixtures"]

BurstWorker = Callable[[], None]


def wait_for(predicate: Callable[[], bool], timeout: float = 20.0, what: str = "") -> None:
    until_sync(predicate, timeout, what)


def spec(func: str, *args: Any, session: str, job_id: str) -> JobSpec:
    return JobSpec(f"tests.queue_jobs.{func}", args, session, job_id)


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie nobody reaps counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def sessions_of(records: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(r["session"], r["n"]) for r in records]


@pytest.fixture
def make_rq(redis_server: RedisServer, tmp_path: Path) -> Iterator[Callable[..., RQQueue]]:
    queues: list[RQQueue] = []

    def make(outbox: Outbox | None = None, **options: Any) -> RQQueue:
        options.setdefault("retry_intervals", (0,))
        options.setdefault("socket_timeout", 1.0)
        outbox = outbox or Outbox(tmp_path / f"state-{len(queues)}.db")
        queue = RQQueue(redis_server.url, outbox=outbox, **options)
        queues.append(queue)
        return queue

    yield make
    for queue in queues:
        queue.close(timeout=5.0)


@pytest.mark.parametrize("retries", [2, 0])
def test_worker_killed_mid_job_is_recovered_by_another_within_seconds(
    make_rq: Callable[..., RQQueue],
    redis_server: RedisServer,
    rq_workers: WorkerProcesses,
    tmp_path: Path,
    retries: int,
) -> None:
    """kill -9 of a worker mid-job: a worker that is running picks the job and its session's
    later jobs up as soon as the dead one's liveness expires — in order, each once."""
    queue = make_rq(retries=retries)
    records, marker = str(tmp_path / "records"), tmp_path / "marker"
    queue.enqueue(spec("block_then_record", records, str(marker), 1, session="s", job_id="s-1"))
    queue.enqueue(spec("record", records, "s", 2, session="s", job_id="s-2"))
    queue.enqueue(spec("record", records, "s", 3, session="s", job_id="s-3"))
    doomed = rq_workers.start(redis_server.url)
    wait_for(lambda: marker.exists() and marker.read_text() != "", what="the job to start")
    assert int(marker.read_text()) == doomed.pid  # no work horse: the job runs in the worker
    survivor = rq_workers.start(redis_server.url)
    rq_workers.kill(doomed)
    Path(f"{marker}.release").touch()

    if retries:  # run again by the survivor, then the rest of the session in order
        wait_for(lambda: len(read_records(records)) == 3, timeout=60, what="the session's jobs")
        assert sessions_of(read_records(records)) == [("blocked", 1), ("s", 2), ("s", 3)]
        assert queue.status().failed == 0
    else:  # no retries left: failed for good, and the session is not blocked by it
        wait_for(lambda: len(read_records(records)) == 2, timeout=60, what="the later jobs")
        assert sessions_of(read_records(records)) == [("s", 2), ("s", 3)]
        [failed] = queue.status().failed_jobs
        assert failed.job_id == "s-1" and "AbandonedJobError" in failed.error
    assert survivor.poll() is None


def test_a_live_workers_running_job_is_never_taken_as_abandoned(
    make_rq: Callable[..., RQQueue],
    redis_server: RedisServer,
    rq_workers: WorkerProcesses,
    tmp_path: Path,
) -> None:
    queue = make_rq(retries=2)
    records, marker = str(tmp_path / "records"), tmp_path / "marker"
    queue.enqueue(spec("block_then_record", records, str(marker), 1, session="s", job_id="s-1"))
    rq_workers.start(redis_server.url, liveness_ttl=1.0)
    wait_for(marker.exists, what="the job to start")
    for _ in range(5):  # well past the liveness TTL: the worker keeps saying it is alive
        assert queue.recover_abandoned() == 0
        time.sleep(0.5)
    Path(f"{marker}.release").touch()
    wait_for(lambda: len(read_records(records)) == 1, what="the job")
    assert sessions_of(read_records(records)) == [("blocked", 1)]


def test_killing_the_supervisor_takes_its_workers_and_scheduler_with_it(
    make_rq: Callable[..., RQQueue],
    redis_server: RedisServer,
    rq_workers: WorkerProcesses,
    tmp_path: Path,
) -> None:
    """kill -9 of ``chorus worker --concurrency 2``'s main process: its workers stop, and a
    new worker takes over the scheduler lock, so delayed retries still run."""
    queue = make_rq(retries=1, retry_intervals=(1,))
    conn = redis.Redis.from_url(redis_server.url)
    main = rq_workers.start(redis_server.url, concurrency=2)
    wait_for(lambda: len(Worker.all(connection=conn)) == 2, what="two workers")
    children = [w.pid for w in Worker.all(connection=conn)]
    wait_for(lambda: conn.exists("rq:scheduler-lock:chorus") == 1, what="the scheduler lock")
    os.kill(main.pid, signal.SIGKILL)  # the main process alone, as a crash would
    main.wait(timeout=10)
    wait_for(
        lambda: not any(alive(pid) for pid in children), timeout=60, what="the workers to stop"
    )

    records = str(tmp_path / "records")
    queue.enqueue(spec("fail_times", records, "k", 1, session="s", job_id="f"))
    rq_workers.start(redis_server.url)
    wait_for(lambda: len(read_records(records)) == 1, timeout=60, what="the delayed retry")


def test_sigterm_lets_the_current_job_finish(
    make_rq: Callable[..., RQQueue],
    redis_server: RedisServer,
    rq_workers: WorkerProcesses,
    tmp_path: Path,
) -> None:
    queue = make_rq()
    records, marker = str(tmp_path / "records"), tmp_path / "marker"
    queue.enqueue(spec("block_then_record", records, str(marker), 1, session="s", job_id="s-1"))
    queue.enqueue(spec("record", records, "s", 2, session="s", job_id="s-2"))
    worker = rq_workers.start(redis_server.url)
    wait_for(marker.exists, what="the job to start")

    worker.send_signal(signal.SIGTERM)
    conn = redis.Redis.from_url(redis_server.url)
    wait_for(
        lambda: any(w.shutdown_requested_date for w in Worker.all(connection=conn)),
        what="the worker to take the shutdown request",
    )
    Path(f"{marker}.release").touch()
    assert worker.wait(timeout=30) == 0, rq_workers.log(worker)
    assert sessions_of(read_records(records)) == [("blocked", 1)]  # finished, not killed
    status = queue.status()
    assert (status.queued, status.started, status.failed) == (1, 0, 0)  # s-2 waits for a worker


def test_outage_parks_jobs_in_the_outbox_and_the_drainer_moves_them(
    make_rq: Callable[..., RQQueue],
    redis_server: RedisServer,
    burst_worker: BurstWorker,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    queue = make_rq()
    records = str(tmp_path / "records")
    for s in ("a", "b"):
        queue.enqueue(spec("record", records, s, 0, session=s, job_id=f"{s}-0"))
    burst_worker()

    redis_server.stop()
    with caplog.at_level(logging.WARNING, logger="memory.jobs"):
        for n in range(1, 6):
            for s in ("a", "b"):
                queue.enqueue(spec("record", records, s, n, session=s, job_id=f"{s}-{n}"))
    status = queue.status()
    assert (status.reachable, status.outbox, status.queued) == (False, 10, 0)
    assert caplog.text.count("unreachable") == 1  # once per outage, not once per job

    redis_server.start()  # same port, empty: what was in Redis before is gone
    queue.start_drainer(interval=0.05)
    wait_for(lambda: queue.status().outbox == 0, what="the drainer")
    burst_worker()
    done = read_records(records)
    assert len(done) == 12
    for s in ("a", "b"):
        assert [r["n"] for r in done if r["session"] == s] == list(range(6))
    assert queue.status().reachable is True


def test_jobs_enqueued_during_an_outage_keep_their_order_behind_the_outbox(
    make_rq: Callable[..., RQQueue],
    redis_server: RedisServer,
    burst_worker: BurstWorker,
    tmp_path: Path,
) -> None:
    queue = make_rq()
    records = str(tmp_path / "records")
    redis_server.stop()
    for n in range(3):
        queue.enqueue(spec("record", records, "s", n, session="s", job_id=f"s-{n}"))
    redis_server.start()
    queue.enqueue(spec("record", records, "s", 3, session="s", job_id="s-3"))  # drains first
    assert queue.flush(timeout=20)
    burst_worker()
    assert [r["n"] for r in read_records(records)] == [0, 1, 2, 3]


@pytest.mark.parametrize("replayed", ["before-the-jobs-ran", "after-the-jobs-ran"])
def test_an_interrupted_drain_needs_idempotent_jobs(
    make_rq: Callable[..., RQQueue],
    redis_server: RedisServer,
    burst_worker: BurstWorker,
    tmp_path: Path,
    replayed: str,
) -> None:
    records = str(tmp_path / "records")
    outbox = Outbox(tmp_path / "state.db")
    queue = make_rq(outbox=outbox)
    redis_server.stop()
    for n in range(3):
        queue.enqueue(spec("record", records, "plain", n, session="plain", job_id=f"plain-{n}"))
        key = f"idem-{n}"
        queue.enqueue(spec("record_once", records, key, "idem", n, session="idem", job_id=key))
    # The rows as a drain read them before it crashed between enqueue and delete.
    copy = Outbox(tmp_path / "copy.db")
    for _, job in outbox.pending():
        copy.put(job)

    redis_server.start()
    assert queue.drain_outbox() == 6
    if replayed == "after-the-jobs-ran":
        burst_worker()
    assert make_rq(outbox=copy).drain_outbox() == 6  # the restarted drain sends them again
    burst_worker()

    done = read_records(records)
    assert [r["n"] for r in done if r["session"] == "idem"] == [0, 1, 2]
    plain = [r["n"] for r in done if r["session"] == "plain"]
    if replayed == "before-the-jobs-ran":  # still waiting in Redis: the duplicate is ignored
        assert plain == [0, 1, 2]
    else:  # finished already: it runs again, which only an idempotent job survives
        assert plain == [0, 1, 2, 0, 1, 2]


def test_retry_interval_waits_in_the_scheduled_registry(
    make_rq: Callable[..., RQQueue], burst_worker: BurstWorker, tmp_path: Path
) -> None:
    queue = make_rq(retries=1, retry_intervals=(1,))
    records = str(tmp_path / "records")
    queue.enqueue(spec("fail_times", records, "k", 1, session="s", job_id="f"))
    burst_worker()
    status = queue.status()
    assert (status.scheduled, status.queued, status.failed) == (1, 0, 0)

    def retried() -> bool:
        burst_worker()  # its scheduler moves due jobs back to the queue
        return len(read_records(records)) == 1

    wait_for(retried, what="the scheduled retry")
    assert queue.status().scheduled == 0


def _registered_by(worker_name: str, queue: RQQueue, job_id: str) -> None:
    """What rq's worker does with a job it takes, up to the moment its work horse
    would mark it started: off the queue into the intermediate list, then registered
    as started with an execution naming the worker (rq's own ``prepare_execution``)."""
    conn = redis.Redis.from_url(queue.url)
    queue_key = f"rq:queue:{queue.name}"
    assert conn.lmove(queue_key, f"{queue_key}:intermediate") == job_id.encode()
    worker = Worker([queue.name], connection=conn, name=worker_name)
    prepare_execution(worker, Job.fetch(job_id, connection=conn))


def test_a_job_registered_by_a_worker_that_died_before_starting_it_is_queued_again(
    make_rq: Callable[..., RQQueue], burst_worker: BurstWorker, tmp_path: Path
) -> None:
    queue = make_rq(retries=0)
    records = str(tmp_path / "records")
    queue.enqueue(spec("record", records, "s", 1, session="s", job_id="s-1"))
    queue.enqueue(spec("record", records, "t", 1, session="t", job_id="t-1"))
    _registered_by("killed-worker", queue, "s-1")  # no liveness key: it is gone
    conn = redis.Redis.from_url(queue.url)
    queue_key = f"rq:queue:{queue.name}"
    assert queue.status().started == 1
    assert Job.fetch("s-1", connection=conn).get_status() == "queued"  # never started
    assert queue.recover_abandoned() == 1
    assert conn.lrange(queue_key, 0, -1) == [b"s-1", b"t-1"]  # back at the head
    assert conn.llen(f"{queue_key}:intermediate") == 0
    assert queue.status().started == 0
    burst_worker()
    assert sorted(sessions_of(read_records(records))) == [("s", 1), ("t", 1)]  # each once
    assert queue.recover_abandoned(time.time() + 20) == 0
    status = queue.status()
    assert (status.queued, status.started, status.failed) == (0, 0, 0)


def test_a_job_a_live_worker_registered_and_has_yet_to_start_is_left_to_it(
    make_rq: Callable[..., RQQueue], tmp_path: Path
) -> None:
    queue = make_rq()
    queue.enqueue(spec("record", str(tmp_path / "records"), "s", 1, session="s", job_id="s-1"))
    conn = redis.Redis.from_url(queue.url)
    conn.set(liveness_key("busy-worker"), str(os.getpid()), ex=60)
    _registered_by("busy-worker", queue, "s-1")
    assert queue.recover_abandoned() == 0
    assert queue.status().started == 1
    assert conn.llen(f"rq:queue:{queue.name}") == 0  # not queued a second time


class DependentArrivesQueue(Queue):
    """A queue on which, the first time a worker records a job's success, another
    client enqueues a job depending on it between rq's WATCH and its EXEC (what the
    gateway does when a session's next turn ends at that moment)."""

    raced: ClassVar[list[str]] = []
    redis_url: ClassVar[str] = ""

    def enqueue_dependents(self, job: Job, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("pipeline") is not None and job.id not in self.raced:
            self.raced.append(job.id)
            other = redis.Redis.from_url(self.redis_url)
            other.sadd(job.dependents_key, "a-dependent-that-raced")
            other.close()
        return super().enqueue_dependents(job, *args, **kwargs)


def test_a_job_whose_success_transaction_is_retried_leaves_the_started_registry(
    make_rq: Callable[..., RQQueue], redis_server: RedisServer, tmp_path: Path
) -> None:
    queue = make_rq()
    records = str(tmp_path / "records")
    queue.enqueue(spec("record", records, "s", 1, session="s", job_id="s-1"))
    DependentArrivesQueue.raced = []
    DependentArrivesQueue.redis_url = redis_server.url
    conn = redis.Redis.from_url(redis_server.url)
    worker = ChorusWorker([queue.name], connection=conn, queue_class=DependentArrivesQueue)
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        worker.work(burst=True)
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    assert DependentArrivesQueue.raced == ["s-1"]  # the WATCH really fired
    assert sessions_of(read_records(records)) == [("s", 1)]
    status = queue.status()
    assert (status.started, status.failed) == (0, 0)


def test_recovery_drops_a_stale_started_entry_of_an_ended_job_without_rerunning_it(
    make_rq: Callable[..., RQQueue], burst_worker: BurstWorker, tmp_path: Path
) -> None:
    queue = make_rq(retries=2)
    records = str(tmp_path / "records")
    queue.enqueue(spec("record", records, "s", 1, session="s", job_id="s-1"))
    burst_worker()
    conn = redis.Redis.from_url(queue.url)
    key = f"rq:wip:{queue.name}"
    conn.zadd(key, {"s-1:leftover-execution": 1})  # what rq 2 could leave behind
    assert queue.status().started == 1
    assert queue.recover_abandoned() == 0
    assert queue.status().started == 0
    burst_worker()
    assert sessions_of(read_records(records)) == [("s", 1)]
    assert queue.status().failed == 0


def test_a_job_taken_by_a_worker_that_died_before_starting_it_is_queued_again(
    make_rq: Callable[..., RQQueue], burst_worker: BurstWorker, tmp_path: Path
) -> None:
    queue = make_rq()
    records = str(tmp_path / "records")
    queue.enqueue(spec("record", records, "s", 1, session="s", job_id="s-1"))
    queue.enqueue(spec("record", records, "t", 1, session="t", job_id="t-1"))
    conn = redis.Redis.from_url(queue.url)
    queue_key = f"rq:queue:{queue.name}"
    # what rq's dequeue does first; the worker is killed before it registers the job
    assert conn.lmove(queue_key, f"{queue_key}:intermediate") == b"s-1"
    assert queue.status().queued == 1  # s-1 is in no queue now, yet "queued"
    now = time.time()
    assert queue.recover_abandoned(now) == 0  # first seen: a live worker may be starting it
    assert queue.recover_abandoned(now + 1) == 0
    assert queue.recover_abandoned(now + 6) == 1
    assert conn.lrange(queue_key, 0, -1) == [b"s-1", b"t-1"]  # back at the head
    assert conn.llen(f"{queue_key}:intermediate") == 0
    burst_worker()
    assert sorted(sessions_of(read_records(records))) == [("s", 1), ("t", 1)]  # each once
    assert queue.recover_abandoned(now + 20) == 0
    status = queue.status()
    assert (status.queued, status.started, status.failed) == (0, 0, 0)

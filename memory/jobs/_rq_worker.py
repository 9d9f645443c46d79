"""``chorus worker``'s engine: rq workers that never fork per job, and their upkeep.

- **No fork per job.** Each worker is an rq ``SimpleWorker`` (``ChorusWorker``): a job runs in the
  worker process itself, so a provider, a database connection or a cache lives
  from one job to the next, and one worker runs hundreds of short jobs a second
  instead of a handful. ``concurrency`` > 1 runs that many worker processes
  under one supervisor (``_rq_supervise``).
- **Upkeep thread.** Every process with a worker keeps a liveness key in Redis
  (``chorus:worker:<name>``, refreshed every second, expiring after
  ``liveness_ttl``). A started job whose worker's key is gone was abandoned by a
  dead worker: it is retried (or failed, with no retries left) within seconds,
  and its session's later jobs go on after it — rq alone would wait up to ten
  minutes. The supervisor's thread also runs rq's scheduler (retries with a
  delay) in-process, taking over a scheduler lock whose holder has no live key.
- **Watching.** A ``JobObserver`` hears of each job's kind, outcome and time (from
  every worker process, ``_rq_observe.JobEvents``); ``WorkerHealth`` is healthy
  while the upkeep reaches Redis.
- **Ledger.** With a job ledger, every job runs under its session's lease
  (``_rq_lease``), the upkeep thread renews the leases its worker holds, and every
  worker sends again, at start and every ``RECONCILE_EVERY`` seconds, the jobs
  the ledger holds whose Redis copy vanished (``RQQueue.reconcile``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, Protocol

import redis
from redis.client import Pipeline
from rq import SimpleWorker
from rq.exceptions import StopRequested
from rq.executions import Execution
from rq.job import Job
from rq.scheduler import RQScheduler

from memory.jobs._ledger import JobLedger
from memory.jobs._rq_lease import JobGuard, LeasedJob
from memory.jobs._rq_listener import stop_listening
from memory.jobs._rq_observe import NO_WATCH, JobObserver, Watch, WorkerHealth, job_kind
from memory.jobs._rq_quiet import quiet_redis_losses
from memory.jobs._rq_stop import StopSignals, wait_for_redis
from memory.jobs._traced import traced

logger = logging.getLogger(__name__)

LIVENESS_KEY = "chorus:worker:{}"
LIVENESS_TTL = 10.0
"""Seconds after a worker's last sign of life when its started jobs count as abandoned."""
UPKEEP_INTERVAL = 1.0
RECOVER_EVERY = 2.0
"""Seconds between two searches for abandoned jobs."""
RECONCILE_EVERY = 30.0
"""Seconds between two searches for jobs of the ledger that Redis lost."""
RESTART_MAX_SECONDS = 30.0
"""Longest wait between two attempts to restart a worker that lost Redis."""
RECONNECT_MAX_SECONDS = 5.0
"""Longest wait between two reconnection attempts of a worker waiting for jobs (rq: 60 s)."""


class WorkedQueue(Protocol):
    """What the worker needs of the queue (``RQQueue``)."""

    @property
    def url(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def ledger(self) -> JobLedger | None: ...

    @property
    def lease_ttl(self) -> float: ...

    @property
    def reconcile_every(self) -> float: ...

    def recover_abandoned(self, now: float | None = None) -> int: ...

    def reconcile(self, ledger: JobLedger | None = None) -> int: ...


class ChorusWorker(SimpleWorker):
    """rq's ``SimpleWorker`` that retries a lost Redis at least every few seconds.

    rq doubles its wait after each failed dequeue up to a minute, so jobs queued
    right after an outage could sit for up to 60 s; chorus caps the wait.
    """

    max_connection_wait_time = RECONNECT_MAX_SECONDS

    def __init__(
        self,
        *args: Any,
        guard: JobGuard | None = None,
        observer: JobObserver | None = None,
        signals: StopSignals | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs["job_class"] = LeasedJob
        super().__init__(*args, **kwargs)
        quiet_redis_losses()  # a lost Redis ends rq's loop with one line; it is restarted
        self._cleaned: Execution | None = None
        self.guard = guard
        self.observer = observer
        self.signals = signals
        self._outcome: str | None = None

    def _install_signal_handlers(self) -> None:
        """With ``signals`` (armed since the process started), they hand a signal to
        this worker while its loop runs; one that came earlier ends it at once."""
        if self.signals is None:
            super()._install_signal_handlers()  # type: ignore[no-untyped-call]
        elif not self.signals.running(self):
            self._stop_requested = True

    def teardown(self) -> None:
        if self.signals is not None:
            self.signals.ended()
        super().teardown()  # type: ignore[no-untyped-call]

    def _shutdown(self) -> None:
        """A stop request also ends the loop at its next turn when the ``StopRequested``
        rq raises from its signal handler is lost: a logging handler that is writing a
        line when the signal comes swallows every exception."""
        self._stop_requested = True
        super()._shutdown()  # type: ignore[no-untyped-call]

    def unsubscribe(self) -> None:
        stop_listening(self)

    def perform_job(self, job: Job, queue: Any) -> bool:
        if isinstance(job, LeasedJob):
            job.guard = self.guard
        self._outcome = None
        started = time.monotonic()
        try:
            meta = job.meta or {}
            with traced(
                job.func_name or "", str(meta.get("session_id", "")), str(meta.get("trace", ""))
            ):
                return bool(super().perform_job(job, queue))
        finally:
            outcome, self._outcome = self._outcome, None
            if self.observer is not None and outcome is not None:
                self.observer(job_kind(job.func_name), outcome, time.monotonic() - started)

    def handle_job_success(self, job: Job, queue: Any, started_job_registry: Any) -> None:
        self._outcome = "done"
        super().handle_job_success(job, queue, started_job_registry)

    def handle_job_failure(
        self, job: Job, queue: Any, started_job_registry: Any = None, exc_string: str = ""
    ) -> None:
        stopped = self._stopped_job_id == job.id
        self._outcome = "retried" if job.should_retry and not stopped else "failed"
        super().handle_job_failure(job, queue, started_job_registry, exc_string)

    def cleanup_execution(self, job: Job, pipeline: Pipeline) -> None:
        """Remove the job's execution from the started registry, also on a retried success.

        rq 2 records a job's success in a WATCHed transaction that is retried when
        the session's next job is enqueued at that moment (its dependents changed);
        the first attempt already forgot the execution, so the retry left the job
        in the started registry for good (rq#2424). The execution is kept here
        until the next job's.
        """
        if self.execution is None and self._cleaned is not None and self._cleaned.job_id == job.id:
            self.execution = self._cleaned
        self._cleaned = self.execution
        super().cleanup_execution(job, pipeline)


def liveness_key(name: str) -> str:
    return LIVENESS_KEY.format(name)


class Upkeep(threading.Thread):
    """Keeps ``name`` alive in Redis, recovers abandoned jobs and (optionally) schedules."""

    def __init__(
        self,
        queue: WorkedQueue,
        name: str,
        *,
        schedule: bool,
        liveness_ttl: float = LIVENESS_TTL,
        guard: JobGuard | None = None,
        health: WorkerHealth | None = None,
    ) -> None:
        super().__init__(name=f"chorus-upkeep-{name[:8]}", daemon=True)
        self._guard = guard
        self._health = health
        self._reconcile_every = queue.reconcile_every
        self._last_reconcile = time.monotonic()
        self._queue = queue
        self._name = name
        self._ttl = liveness_ttl
        self._stop_event = threading.Event()
        self._conn = redis.Redis.from_url(queue.url, socket_timeout=5, socket_connect_timeout=5)
        self._scheduler = (
            RQScheduler([queue.name], connection=self._conn, interval=1, name=name)
            if schedule
            else None
        )
        self._last_recover = 0.0

    def beat(self) -> None:
        self._conn.set(liveness_key(self._name), str(os.getpid()), px=int(self._ttl * 1000))

    def run(self) -> None:
        while not self._stop_event.is_set():
            try:
                self.tick()
            except redis.RedisError as exc:
                if self._health is not None:
                    self._health.lost()
                logger.warning("worker upkeep: Redis unavailable (%s)", type(exc).__name__)
            except Exception:
                logger.exception("worker upkeep failed")
            self._stop_event.wait(UPKEEP_INTERVAL)

    def tick(self) -> None:
        self.beat()
        if self._health is not None:
            self._health.reached(self._ttl)
        if self._scheduler is not None:
            self._schedule(self._scheduler)
        if self._guard is not None:
            self._guard.renew()
        now = time.monotonic()
        if now - self._last_recover >= RECOVER_EVERY:
            self._last_recover = now
            self._queue.recover_abandoned()
        if self._guard is not None and now - self._last_reconcile >= self._reconcile_every:
            self._last_reconcile = now
            self._queue.reconcile(self._guard.ledger)

    def _schedule(self, scheduler: RQScheduler) -> None:
        if not scheduler.acquired_locks:
            self._take_over_stale_lock()
            scheduler.acquire_locks()  # type: ignore[no-untyped-call]
        else:
            scheduler.heartbeat()  # type: ignore[no-untyped-call]
        if scheduler.acquired_locks:
            scheduler.enqueue_scheduled_jobs()  # type: ignore[no-untyped-call]

    def _take_over_stale_lock(self) -> None:
        """A scheduler lock whose holder shows no sign of life is released for us."""
        key = RQScheduler.get_locking_key(self._queue.name)
        holder = self._conn.get(key)
        if holder is None:
            return
        name = holder.decode() if isinstance(holder, bytes) else str(holder)
        stale = name != self._name and not self._conn.exists(liveness_key(name))
        if stale and self._conn.eval(_DELETE_IF, 1, key, name):
            logger.warning("took over the scheduler lock of dead worker %s", name[:8])

    def stop(self) -> None:
        self._stop_event.set()
        if self.ident is not None:  # started
            self.join(5)
        if self._health is not None:
            self._health.lost()
        with contextlib.suppress(redis.RedisError):
            if self._scheduler is not None and self._scheduler.acquired_locks:
                self._scheduler.release_locks()  # type: ignore[no-untyped-call]
            self._conn.delete(liveness_key(self._name))
        self._conn.close()


_DELETE_IF = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end"


def work(
    queue: WorkedQueue,
    *,
    burst: bool,
    schedule: bool,
    liveness_ttl: float,
    on_stop: Callable[[], None] | None = None,
    watch: Watch = NO_WATCH,
    signals: StopSignals | None = None,
) -> None:
    """One ``SimpleWorker`` in this process, restarted when Redis comes back after a loss.

    rq quits its loop when Redis goes away at the wrong moment (while a job's end is
    recorded, say) and its own teardown then fails on the same lost connection; the
    process stays, waits for Redis and starts a fresh worker. ``on_stop`` runs in
    this process when it stops working (what jobs kept open is released there).
    ``signals`` (armed here when not given) stop it warmly whenever they come.
    """
    if signals is None:
        signals = StopSignals()
        signals.arm()
    try:
        _work(queue, burst, schedule, liveness_ttl, watch, signals)
    finally:
        if on_stop is not None:
            try:
                on_stop()
            except Exception:
                logger.exception("releasing what the jobs held failed")


def _work(
    queue: WorkedQueue,
    burst: bool,
    schedule: bool,
    liveness_ttl: float,
    watch: Watch,
    signals: StopSignals,
) -> None:
    delay = 1.0
    while not signals.requested.is_set():
        name = uuid.uuid4().hex
        try:
            if _work_once(queue, name, burst, schedule, liveness_ttl, watch, signals):
                return
            logger.warning(
                "worker %s stopped unexpectedly; restarting when Redis answers", name[:8]
            )
        except redis.RedisError as exc:
            logger.warning(
                "worker %s lost Redis (%s); restarting when Redis answers",
                name[:8],
                type(exc).__name__,
            )
        if wait_for_redis(queue.url, delay, signals.requested):
            return
        delay = min(delay * 2, RESTART_MAX_SECONDS)
    logger.info("worker stopped as asked before it started")


def _work_once(
    queue: WorkedQueue,
    name: str,
    burst: bool,
    schedule: bool,
    liveness_ttl: float,
    watch: Watch,
    signals: StopSignals,
) -> bool:
    """Run one rq worker until it stops; True when it stopped as asked (or burst ended).

    With a ledger this process opens its own connection to it (the worker may be a
    forked child) and sends again what Redis lost before it takes its first job.
    """
    shared = queue.ledger
    ledger = JobLedger(shared.location) if shared is not None else None
    guard = JobGuard(ledger, name, ttl=queue.lease_ttl) if ledger is not None else None
    upkeep = Upkeep(
        queue, name, schedule=schedule, liveness_ttl=liveness_ttl, guard=guard, health=watch.health
    )
    worker = ChorusWorker(
        [queue.name],
        connection=redis.Redis.from_url(queue.url),
        name=name,
        guard=guard,
        observer=watch.observer,
        signals=signals,
    )
    logger.info("worker %s on queue %s", name[:8], queue.name)
    try:
        upkeep.beat()
        queue.recover_abandoned()
        if ledger is not None:
            queue.reconcile(ledger)
        upkeep.start()
        worker.work(burst=burst, with_scheduler=False)
    except StopRequested:
        pass  # a signal between rq's loop and its teardown: stopped as asked
    except redis.RedisError as exc:
        if not signals.requested.is_set():
            raise
        # asked to stop while Redis is away: rq's teardown failed on the lost
        # connection, and there is nothing left to finish
        logger.info(
            "worker %s stopped as asked; Redis unavailable (%s)", name[:8], type(exc).__name__
        )
    finally:
        upkeep.stop()
        stop_listening(worker)  # rq leaves its listener thread running when teardown failed
        if ledger is not None:
            ledger.close()
    return burst or signals.requested.is_set() or _stop_requested(worker)


def _stop_requested(worker: SimpleWorker) -> bool:
    """True once rq's stop command (or a signal rq handled) asked ``worker`` to stop."""
    return getattr(worker, "_shutdown_requested_date", None) is not None

"""``RQQueue``: background jobs as rq jobs on Redis, run by ``chorus worker`` processes.

Each job depends on the previous job of its session (``allow_failure``, so a
job that failed for good does not block its session); failures are retried
with rq's ``Retry`` and end in rq's FailedJobRegistry. While Redis is
unreachable jobs wait in a SQLite ``Outbox`` and move to Redis, oldest first,
once it answers again.

With a ``JobLedger`` (in the database) Redis is only the transport: a job is
recorded before it is sent and kept until done; ``reconcile`` (at start, then
every ``reconcile_every`` seconds, in the gateway and every worker) sends again
each job not done whose Redis copy vanished. With ``background=True`` an
``enqueue`` only writes the database and a thread hands the job to Redis.

This module and the worker entry point are the only ones that import
``redis`` and ``rq``; ``memory.jobs`` imports it only when ``RQQueue`` is
asked for, so a process without Redis never loads them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry as RedisRetry
from rq import Queue, Retry
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.job import Dependency, Job, JobStatus

from memory.errors import JobQueueError
from memory.jobs._ledger import JobLedger
from memory.jobs._outbox import Outbox, OutboxRelay
from memory.jobs._rq_lease import LEASE_TTL
from memory.jobs._rq_observe import NO_WATCH, Watch
from memory.jobs._rq_reconcile import resend_lost
from memory.jobs._rq_recover import AbandonedJobs
from memory.jobs._rq_supervise import supervise
from memory.jobs._rq_worker import LIVENESS_TTL, RECONCILE_EVERY
from memory.jobs._types import (
    BackgroundQueue,
    FailedJob,
    JobSpec,
    QueueStatus,
    error_line,
    mask_url,
)

__all__ = ["RQQueue"]

logger = logging.getLogger(__name__)

FAILURE_TTL = 7 * 24 * 3600
"""Seconds a failed rq job stays in the FailedJobRegistry for admins to see and retry."""

LAST_JOB_KEY = "chorus:queue:last:{}"
"""Redis key holding the id of a session's most recently enqueued job."""

MAX_FAILED_LISTED = 100
"""Failed jobs described in ``QueueStatus.failed_jobs`` (the most recent ones)."""

_WAITING = {JobStatus.QUEUED, JobStatus.DEFERRED, JobStatus.SCHEDULED, JobStatus.STARTED}


class RQQueue(AbandonedJobs, BackgroundQueue):
    """rq jobs on Redis, with a SQLite outbox for the time Redis is unreachable.

    The queue owns ``outbox``: ``close()`` closes it. Calls to Redis use short
    socket timeouts and no client-side retries, so an unreachable Redis costs an
    ``enqueue`` at most ``socket_timeout`` once per second; meanwhile jobs go to
    the outbox, and ``start_drainer()`` moves them when Redis answers again.
    """

    def __init__(
        self,
        redis_url: str,
        *,
        outbox: Outbox,
        queue_name: str = "chorus",
        retries: int = 3,
        retry_intervals: Sequence[int] = (10, 60, 300),
        job_timeout: int = 600,
        result_ttl: int = 86400,
        socket_timeout: float = 2.0,
        ledger: JobLedger | None = None,
        background: bool = False,
        lease_ttl: float = LEASE_TTL,
        reconcile_every: float = RECONCILE_EVERY,
    ) -> None:
        self._url = redis_url
        self._ledger = ledger
        self._lease_ttl = lease_ttl
        self._reconcile_every = reconcile_every
        self._queue_name = queue_name
        self._retries = retries
        self._retry = Retry(max=retries, interval=list(retry_intervals) or 0) if retries else None
        self._job_timeout = job_timeout
        self._result_ttl = result_ttl
        # No client-side retries: a failed call goes to the outbox at once.
        self._conn = redis.Redis.from_url(
            redis_url,
            socket_timeout=socket_timeout,
            socket_connect_timeout=socket_timeout,
            retry=RedisRetry(NoBackoff(), 0),
        )
        self._queue = Queue(queue_name, connection=self._conn)
        self._relay = OutboxRelay(
            outbox,
            self._submit,
            errors=(redis.RedisError,),
            target=f"Redis at {mask_url(redis_url)}",
            background=background,
            tick=self.reconcile if ledger is not None else None,
            tick_every=reconcile_every,
        )

    @property
    def queue(self) -> Queue:
        return self._queue

    @property
    def connection(self) -> redis.Redis:
        return self._conn

    @property
    def ledger(self) -> JobLedger | None:
        return self._ledger

    @property
    def lease_ttl(self) -> float:
        return self._lease_ttl

    @property
    def reconcile_every(self) -> float:
        return self._reconcile_every

    def enqueue(self, job: JobSpec) -> None:
        if self._ledger is not None:
            try:
                if not self._ledger.record(job):
                    logger.debug("job %s already waiting; duplicate ignored", job.job_id)
                    return
            except JobQueueError:
                logger.exception("cannot record job %s in the job ledger", job.job_id)
        self._relay.send(job)

    def reconcile(self, ledger: JobLedger | None = None, *, grace: float = 2.0) -> int:
        """Send again the jobs of the ledger not done whose Redis copy vanished; how many.

        Jobs recorded less than ``grace`` seconds ago may still be on their way and
        are left alone; a job rq failed for good is marked failed in the ledger. Jobs
        go in the order they were recorded; one sent twice (it was in the outbox too)
        is ignored while it waits, or skipped by its worker once done.
        """
        ledger = ledger or self._ledger
        if ledger is None:
            return 0
        sent = 0
        try:
            sent = resend_lost(self._conn, ledger, self._submit, grace)
            ledger.prune()
        except redis.RedisError as exc:
            logger.warning("reconcile: Redis at %s: %s", mask_url(self._url), type(exc).__name__)
        except JobQueueError:
            logger.exception("reconcile: cannot read the job ledger")
        if sent:
            logger.warning("sent %d background job(s) again that Redis had lost", sent)
        return sent

    def drain_outbox(self) -> int:
        """Move outbox rows to Redis, oldest first; returns how many were moved.

        A row is deleted only after its enqueue succeeded, so a crash in between
        enqueues that job again on the next drain: harmless with deterministic
        ids and idempotent job functions.
        """
        return self._relay.drain()

    def start_drainer(self, interval: float = 5.0) -> None:
        """Drain the outbox now and every ``interval`` seconds until ``close()``."""
        self._relay.start(interval)

    def status(self) -> QueueStatus:
        outbox = self._relay.pending()
        try:
            failed_registry = self._queue.failed_job_registry
            ids = failed_registry.get_job_ids(0, MAX_FAILED_LISTED - 1, desc=True, cleanup=False)
            jobs = Job.fetch_many(ids, connection=self._conn)
            return QueueStatus(
                backend="redis",
                queued=self._queue.count,
                started=self._queue.started_job_registry.get_job_count(cleanup=False),
                deferred=self._queue.deferred_job_registry.get_job_count(cleanup=False),
                scheduled=self._queue.scheduled_job_registry.get_job_count(cleanup=False),
                failed=failed_registry.get_job_count(cleanup=False),
                outbox=outbox,
                failed_jobs=[_describe_failed(job) for job in jobs if job is not None],
            )
        except redis.RedisError as exc:
            logger.warning("queue status: Redis at %s: %s", mask_url(self._url), type(exc).__name__)
            return QueueStatus(backend="redis", outbox=outbox, reachable=False)

    def depth(self) -> tuple[int, int]:
        """Jobs waiting to run (queued, deferred or scheduled) and jobs failed for good,
        as Redis counts them now; raises ``redis.RedisError`` when it cannot tell."""
        queue = self._queue
        waiting = (
            queue.count
            + queue.deferred_job_registry.get_job_count(cleanup=False)
            + queue.scheduled_job_registry.get_job_count(cleanup=False)
        )
        return waiting, queue.failed_job_registry.get_job_count(cleanup=False)

    def retry_failed(self) -> int:
        """Requeue every failed job with a fresh retry budget (at the back of the queue)."""
        registry = self._queue.failed_job_registry
        count = 0
        try:
            for job_id in registry.get_job_ids(cleanup=False):
                try:
                    job = Job.fetch(job_id, connection=self._conn)
                    job.retries_left = self._retries or None
                    registry.requeue(job)
                except (NoSuchJobError, InvalidJobOperation):
                    registry.remove(job_id)
                    continue
                count += 1
        except redis.RedisError as exc:
            logger.warning("retry_failed: Redis at %s: %s", mask_url(self._url), type(exc).__name__)
        return count

    @property
    def url(self) -> str:
        return self._url

    @property
    def name(self) -> str:
        return self._queue_name

    def run_worker(
        self,
        *,
        burst: bool = False,
        concurrency: int = 1,
        liveness_ttl: float = LIVENESS_TTL,
        on_stop: Callable[[], None] | None = None,
        watch: Watch = NO_WATCH,
    ) -> None:
        """Work the queue until SIGTERM (or until it is empty with ``burst``): see ``_rq_worker``.

        SIGTERM is a warm shutdown: the current job finishes, then the process
        exits; a second signal stops at once (the job is then recovered as
        abandoned by the next worker within ``liveness_ttl`` seconds). ``on_stop``
        runs in each worker process as it stops; ``watch`` hears of the jobs run.
        """
        supervise(
            self,
            concurrency=concurrency,
            burst=burst,
            liveness_ttl=liveness_ttl,
            on_stop=on_stop,
            watch=watch,
        )

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until the outbox is empty (jobs handed to Redis, not necessarily run)."""
        return self._relay.flush(timeout)

    def close(self, timeout: float = 5.0, *, drain: bool = True) -> None:
        """Stop taking jobs and try one last drain; rows left stay for the next start.

        ``drain=False`` leaves the outbox to the process that owns it (``chorus queue
        status`` and ``chorus doctor`` only look)."""
        self._relay.close(timeout, drain=drain)
        self._conn.close()
        if self._ledger is not None:
            self._ledger.close()

    # -- internals ----------------------------------------------------------------------

    def _submit(self, job: JobSpec) -> None:
        existing = self._fetch(job.job_id)
        if existing is not None:
            if existing.get_status(refresh=False) in _WAITING:
                logger.debug("job %s already waiting; duplicate ignored", job.job_id)
                return
            existing.delete(remove_from_queue=True)
        last_key = LAST_JOB_KEY.format(job.session_id)
        raw = self._conn.get(last_key)
        prev = raw.decode() if isinstance(raw, bytes) else None
        if prev == job.job_id:
            prev = None
        self._queue.enqueue_call(
            func=job.func,
            args=job.args,
            job_id=job.job_id,
            description=job.description or job.func,
            timeout=self._job_timeout,
            result_ttl=self._result_ttl,
            failure_ttl=FAILURE_TTL,
            retry=self._retry,
            depends_on=Dependency(jobs=[prev], allow_failure=True) if prev else None,
            meta={"session_id": job.session_id, "trace": job.trace},
        )
        self._conn.set(last_key, job.job_id, ex=self._result_ttl)
        if prev:
            # rq defers a job whose dependency failed *before* the enqueue (it only
            # accepts FINISHED there) and nothing would release it; do it here.
            parent = self._fetch(prev)
            if parent is not None and parent.get_status(refresh=False) == JobStatus.FAILED:
                self._queue.enqueue_dependents(parent)

    def _fetch(self, job_id: str) -> Job | None:
        try:
            return Job.fetch(job_id, connection=self._conn)
        except NoSuchJobError:
            return None


def _describe_failed(job: Job) -> FailedJob:
    result = job.latest_result()
    error = error_line(result.exc_string or "") if result is not None else ""
    ended = job.ended_at
    return FailedJob(
        job_id=job.id,
        func=job.func_name or "",
        session_id=str(job.meta.get("session_id", "")),
        error=error,
        failed_at=ended.timestamp() if ended is not None else None,
    )

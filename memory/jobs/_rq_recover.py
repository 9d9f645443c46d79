"""Jobs of workers that died: ``RQQueue.recover_abandoned`` retries (or fails) a started
job whose worker's liveness key is gone or whose rq lease ran out, and puts back at the
head of the queue a job a worker took off it and died before starting (whether or not it
had registered the job as started yet).

``AbandonedJobs`` is a part of ``memory.jobs._rq.RQQueue`` (its base class).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import redis
from rq import Queue
from rq.executions import Execution
from rq.job import Job, JobStatus

from memory.jobs._rq_worker import liveness_key
from memory.jobs._types import mask_url

__all__ = ["STRANDED_AFTER", "AbandonedJobs"]

logger = logging.getLogger("memory.jobs._rq")  # logged as the queue's own lines

_ENDED = {JobStatus.FINISHED, JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED}
STRANDED_AFTER = 5.0
"""Seconds a job may sit taken but not started before it counts as stranded (a live
worker starts a job it took within milliseconds)."""
_REQUEUE_STRANDED = """
if redis.call('lrem', KEYS[1], 1, ARGV[1]) == 0 then return 0 end
if redis.call('hget', KEYS[3], 'status') == 'queued' then
  redis.call('lpush', KEYS[2], ARGV[1])
  return 1
end
return 0
"""
"""Out of the intermediate list and back at the head of the queue, if still queued."""
_REQUEUE_UNSTARTED = """
if redis.call('hget', KEYS[4], 'status') ~= 'queued' then return 0 end
if redis.call('zrem', KEYS[3], ARGV[2]) == 0 then return 0 end
redis.call('lrem', KEYS[1], 1, ARGV[1])
redis.call('lpush', KEYS[2], ARGV[1])
return 1
"""
"""Out of the started registry and the intermediate list and back at the head of the
queue, if its worker never marked it started."""


class AbandonedJobs:
    """The recovery side of the rq queue."""

    _url: str
    _conn: redis.Redis
    _queue: Queue

    if TYPE_CHECKING:  # the queue's own, used here

        def _fetch(self, job_id: str) -> Job | None: ...

    def recover_abandoned(self, now: float | None = None) -> int:
        """Retry (or fail, when no retries are left) jobs of workers that died mid-job.

        A started job is abandoned when its worker's liveness key is gone (chorus
        workers refresh theirs every second; see ``_rq_worker``) or when rq's own
        lease on it ran out. Its entry is expired and ``StartedJobRegistry.cleanup``
        does the rest as rq would: retry it when ``retries_left > 0``, else move it
        to the FailedJobRegistry, and release its dependents either way. ``now``
        moves rq's clock forward (tests).
        """
        registry = self._queue.started_job_registry
        try:
            stranded = self._requeue_stranded(time.time() if now is None else now)
            dead, unstarted = self._entries_of_dead_workers(registry.key)
            stranded += unstarted
            if dead:
                # xx: an entry removed meanwhile (its job just ended) is not re-added
                self._conn.zadd(registry.key, dict.fromkeys(dead, 1), xx=True)
            expired = registry.get_expired_job_ids(now)
            registry.cleanup(timestamp=now)
        except redis.RedisError as exc:
            logger.warning("recover: Redis at %s: %s", mask_url(self._url), type(exc).__name__)
            return 0
        if expired or stranded:
            logger.warning(
                "recovered %d background job(s) of dead workers", len(expired) + stranded
            )
        return len(expired) + stranded

    def _requeue_stranded(self, now: float) -> int:
        """Put back jobs a worker took off the queue and died before starting.

        rq moves a job it takes into the queue's intermediate list and only then
        registers it as started; a worker killed in between leaves it there, still
        "queued" yet in no queue (rq itself would fail it, minutes later). A job seen
        there, unstarted, ``STRANDED_AFTER`` seconds apart goes back to the head of the
        queue: it was never run.
        """
        queue = self._queue
        key = queue.intermediate_queue_key
        registry = queue.started_job_registry
        count = 0
        for raw in self._conn.lrange(key, 0, -1):
            job_id = raw.decode() if isinstance(raw, bytes) else str(raw)
            if job_id in registry:
                continue
            seen_key = f"chorus:stranded:{queue.name}:{job_id}"
            if self._conn.set(seen_key, repr(now), nx=True, ex=600):
                continue  # first seen now: a live worker may be about to start it
            first = self._conn.get(seen_key)
            if first is None or now - float(first) < STRANDED_AFTER:
                continue
            keys = [key, queue.key, Job.key_for(job_id)]
            if self._conn.eval(_REQUEUE_STRANDED, 3, *keys, job_id):
                count += 1
                logger.info("job %s was taken by a worker that died; queued again", job_id)
            self._conn.delete(seen_key)
        return count

    def _entries_of_dead_workers(self, key: str) -> tuple[list[str], int]:
        """Entries of started jobs whose worker is gone, and how many jobs were put back
        in the queue because their dead worker had registered them but not started
        them; entries of jobs that already ended (a worker's bookkeeping left them
        behind) are dropped, never retried."""
        dead: list[str] = []
        unstarted = 0
        for member in self._conn.zrange(key, 0, -1):
            raw = member.decode() if isinstance(member, bytes) else str(member)
            job = self._fetch(raw.split(":", 1)[0])
            status = job.get_status(refresh=False) if job is not None else None
            if job is not None and status in _ENDED:
                self._conn.zrem(key, raw)
                logger.info("dropped the stale started entry of ended job %s", job.id)
                continue
            if job is not None and status == JobStatus.QUEUED:
                # rq's worker registers the job (its execution names the worker) and
                # only then its work horse marks it started: a worker killed between
                # the two left it registered, still queued, never run
                worker = self._execution_worker(raw)
                if worker and not self._conn.exists(liveness_key(worker)):
                    unstarted += self._requeue_unstarted(key, raw, job.id)
                continue
            worker = job.worker_name if job is not None else None
            if worker and not self._conn.exists(liveness_key(worker)):
                dead.append(raw)
        return dead, unstarted

    def _execution_worker(self, member: str) -> str | None:
        """The worker named by the execution behind a started registry entry."""
        if ":" not in member:
            return None
        name = self._conn.hget(Execution.from_composite_key(member, self._conn).key, "worker_name")
        if name is None:
            return None
        return name.decode() if isinstance(name, bytes) else str(name)

    def _requeue_unstarted(self, key: str, member: str, job_id: str) -> int:
        queue = self._queue
        keys = [queue.intermediate_queue_key, queue.key, key, Job.key_for(job_id)]
        if not self._conn.eval(_REQUEUE_UNSTARTED, 4, *keys, job_id, member):
            return 0
        logger.info(
            "job %s was taken by a worker that died before starting it; queued again", job_id
        )
        return 1

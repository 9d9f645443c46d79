"""Sends again the jobs of the ledger whose Redis copy vanished (``RQQueue.reconcile``)."""

from __future__ import annotations

from collections.abc import Callable

import redis
from rq.job import Job, JobStatus

from memory.jobs._ledger import FAILED, JobLedger
from memory.jobs._types import JobSpec

__all__ = ["resend_lost"]


def resend_lost(
    conn: redis.Redis, ledger: JobLedger, submit: Callable[[JobSpec], None], grace: float
) -> int:
    """Submit, oldest first, each job not done nor failed in ``ledger`` that Redis has no
    hash of; a job rq failed for good is marked failed. Returns how many were sent.

    One round trip reads the status of every unfinished job. Raises ``redis.RedisError``
    and ``JobQueueError`` as they come.
    """
    jobs = ledger.unfinished(older_than=grace)
    if not jobs:
        return 0
    with conn.pipeline(transaction=False) as pipe:
        for job in jobs:
            pipe.hget(Job.key_for(job.job_id), "status")
        statuses = pipe.execute()
    sent = 0
    for job, raw in zip(jobs, statuses, strict=True):
        status = raw.decode() if isinstance(raw, bytes) else raw
        if status == JobStatus.FAILED.value:
            ledger.set_state(job.job_id, FAILED)
        elif status is None:  # its Redis copy is gone
            submit(job)
            sent += 1
    return sent

"""Runs each rq job under its session's lease, as the job ledger says (``_ledger``).

Before a job runs, its worker takes the session's lease in the database; while
another live run holds it, the job waits (a worker paused in the middle of the
job, say, whose job rq already handed to another worker). A job the ledger
knows as done is not run again. The job runs fenced: its step marks
(``JobState``) and its ledger row count only while its lease is current, so a
run that lost its lease (paused past it, then resumed) commits nothing and ends
as superseded.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from rq.job import Job

from memory.errors import JobQueueError, StaleLeaseError
from memory.jobs._ledger import (
    ALREADY_DONE,
    FAILED,
    NOT_RECORDED,
    PENDING,
    Fence,
    JobLedger,
    fenced,
    owner_name,
)

__all__ = ["LEASE_TTL", "JobGuard", "LeasedJob"]

logger = logging.getLogger(__name__)

LEASE_TTL = 60.0
"""Seconds a session's lease outlives its holder's last renewal (a worker renews every
second): a worker paused for less than that finishes its job itself; after it, the job
goes to another worker and the paused run cannot commit."""
LEASE_POLL = 0.1
"""Seconds between two attempts to take a held lease."""


class JobGuard:
    """Takes the lease of a job's session, runs it fenced, records its end in the ledger."""

    def __init__(self, ledger: JobLedger, worker: str, *, ttl: float = LEASE_TTL) -> None:
        self.ledger = ledger
        self.owner = owner_name(worker)
        self.ttl = ttl

    def renew(self) -> None:
        self.ledger.renew(self.owner, self.ttl)

    def run(self, job: Job, execute: Callable[[], Any]) -> Any:
        session = str(job.meta.get("session_id") or "")
        epoch = self._take(job, session) if session else NOT_RECORDED
        if epoch == NOT_RECORDED:  # enqueued without a ledger row (an earlier version)
            return execute()
        if epoch == ALREADY_DONE:
            logger.info("job %s is done already; not run again", job.id)
            return "already done"
        fence = Fence(session, epoch)
        try:
            with fenced(fence):
                result = execute()
            self.ledger.finish(job.id, fence)
        except StaleLeaseError:
            logger.warning(
                "job %s lost the lease of session %s to another run; its results are discarded",
                job.id,
                session,
            )
            return "superseded"
        except BaseException:
            final = not job.retries_left
            try:
                self.ledger.finish(job.id, fence, FAILED if final else PENDING)
            except JobQueueError:
                logger.warning("job %s: its ledger row was not updated", job.id)
            raise
        return result

    def _take(self, job: Job, session: str) -> int:
        """The lease's epoch for ``job``, waiting while another run holds it (or
        ``NOT_RECORDED``, ``ALREADY_DONE``)."""
        waited = False
        while True:
            epoch = self.ledger.take_lease(session, job.id, self.owner, self.ttl)
            if epoch is not None:
                if waited and epoch > 0:
                    logger.info("job %s took the lease of session %s", job.id, session)
                return epoch
            if not waited:
                logger.warning(
                    "job %s waits for the lease of session %s, held by another run",
                    job.id,
                    session,
                )
                waited = True
            time.sleep(LEASE_POLL)


class LeasedJob(Job):
    """An rq job that runs through its worker's ``JobGuard`` when it has one."""

    guard: JobGuard | None = None

    def _execute(self) -> Any:
        guard = self.guard
        if guard is None:
            return super()._execute()
        return guard.run(self, super()._execute)

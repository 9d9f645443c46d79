"""Enqueues the agent's background jobs by id; the reply never waits for them.

Job ids make a duplicate enqueue harmless: a turn is referred to by its position
in the transcript (every user message ever stored counts, undone ones too), so
the turn after an ``/undo`` gets a new id and never an old one's.
"""

from __future__ import annotations

import logging
import uuid

from agent import tracing
from memory.jobs import BackgroundQueue, JobSpec, JobState

__all__ = ["JOBS_MODULE", "JOB_NAMES", "JobScheduler", "approved_write_job"]

logger = logging.getLogger(__name__)

JOBS_MODULE = "agent.jobs"
JOB_NAMES = ("sync_turn", "queue_prefetch", "rewind", "end_session", "approved_write", "prefetch")
"""The job functions of ``JOBS_MODULE`` a queue may hold (``prefetch``: earlier versions')."""


class JobScheduler:
    """The agent's side of the background queue."""

    def __init__(self, queue: BackgroundQueue, state: JobState) -> None:
        self.queue = queue
        self.state = state

    def _enqueue(
        self, name: str, session_id: str, args: tuple[str | int, ...], job_id: str, what: str
    ) -> None:
        self.queue.enqueue(
            JobSpec(
                func=f"{JOBS_MODULE}.{name}",
                args=(session_id, *args),
                session_id=session_id,
                job_id=job_id,
                description=f"{what} of {session_id}",
                trace=tracing.current().carrier(),
            )
        )

    def sync_turn(self, session_id: str, position: int) -> None:
        job_id = f"chorus-sync-{session_id}-{position}"
        self._enqueue("sync_turn", session_id, (position,), job_id, f"sync turn {position}")

    def queue_prefetch(self, session_id: str, query: str) -> None:
        job_id = f"chorus-prefetch-{session_id}-{uuid.uuid4().hex[:12]}"
        self._enqueue("queue_prefetch", session_id, (query,), job_id, "prefetch")

    def rewind(self, session_id: str, position: int, reason: str, user_text: str = "") -> None:
        job_id = f"chorus-rewind-{session_id}-{position}"
        args = (position, reason, user_text) if user_text else (position, reason)
        self._enqueue("rewind", session_id, args, job_id, f"withdraw turn {position}")

    def end_session(self, session_id: str, reason: str) -> None:
        self._enqueue("end_session", session_id, (reason,), f"chorus-end-{session_id}", "end")


def approved_write_job(session_id: str, staged_id: int) -> JobSpec:
    """The job telling the providers of ``session_id`` that an admin approved ``staged_id``."""
    return JobSpec(
        func=f"{JOBS_MODULE}.approved_write",
        args=(session_id, staged_id),
        session_id=session_id,
        job_id=f"chorus-approved-{staged_id}",
        description=f"approved write #{staged_id} of {session_id}",
    )

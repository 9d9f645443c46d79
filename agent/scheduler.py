"""Enqueues the agent's background jobs by id; the reply never waits for them."""

from __future__ import annotations

import logging
import uuid

from memory.job_state import JobState
from memory.queue import BackgroundQueue, JobSpec

logger = logging.getLogger(__name__)

JOBS_MODULE = "agent.jobs"


class JobScheduler:
    """The agent's side of the background queue."""

    def __init__(self, queue: BackgroundQueue, state: JobState) -> None:
        self.queue = queue
        self.state = state

    def sync_turn(self, session_id: str, turn_index: int) -> None:
        self.queue.enqueue(
            JobSpec(
                func=f"{JOBS_MODULE}.sync_turn",
                args=(session_id, turn_index),
                session_id=session_id,
                job_id=f"chorus-sync-{session_id}-{turn_index}",
                description=f"sync turn {turn_index} of {session_id}",
            )
        )

    def prefetch(self, session_id: str, query: str) -> None:
        self.queue.enqueue(
            JobSpec(
                func=f"{JOBS_MODULE}.prefetch",
                args=(session_id, query),
                session_id=session_id,
                job_id=f"chorus-prefetch-{session_id}-{uuid.uuid4().hex[:12]}",
                description=f"prefetch for {session_id}",
            )
        )

    def end_session(self, session_id: str, reason: str) -> None:
        self.queue.enqueue(
            JobSpec(
                func=f"{JOBS_MODULE}.end_session",
                args=(session_id, reason),
                session_id=session_id,
                job_id=f"chorus-end-{session_id}",
                description=f"end {session_id} ({reason})",
            )
        )

    def take_prefetched(self, session_id: str) -> str | None:
        return self.state.take_prefetched(session_id)

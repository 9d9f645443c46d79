"""Enqueues the agent's background jobs by id; the reply never waits for them."""

from __future__ import annotations

import logging
import uuid

from memory.jobs import BackgroundQueue, JobSpec, JobState

logger = logging.getLogger(__name__)

JOBS_MODULE = "agent.jobs"


class JobScheduler:
    """The agent's side of the background queue."""

    def __init__(self, queue: BackgroundQueue, state: JobState) -> None:
        self.queue = queue
        self.state = state

    def _enqueue(self, name: str, session_id: str, arg: str | int, job_id: str, what: str) -> None:
        self.queue.enqueue(
            JobSpec(
                func=f"{JOBS_MODULE}.{name}",
                args=(session_id, arg),
                session_id=session_id,
                job_id=job_id,
                description=f"{what} of {session_id}",
            )
        )

    def sync_turn(self, session_id: str, turn_index: int) -> None:
        job_id = f"chorus-sync-{session_id}-{turn_index}"
        self._enqueue("sync_turn", session_id, turn_index, job_id, f"sync turn {turn_index}")

    def prefetch(self, session_id: str, query: str) -> None:
        job_id = f"chorus-prefetch-{session_id}-{uuid.uuid4().hex[:12]}"
        self._enqueue("prefetch", session_id, query, job_id, "prefetch")

    def end_session(self, session_id: str, reason: str) -> None:
        self._enqueue("end_session", session_id, reason, f"chorus-end-{session_id}", "end")

    def take_prefetched(self, session_id: str) -> str | None:
        return self.state.take_prefetched(session_id)

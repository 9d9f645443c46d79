"""``InProcessQueue``: background jobs on one thread of the running process.

The embedded default when no Redis is configured. One worker thread runs every
job in enqueue order, which keeps each session's jobs in order. A job raising an
exception is retried after ``backoff[i]`` seconds (through the injectable
``sleep``) up to ``retries`` more times, then kept in an in-memory failed list
until ``retry_failed()``. Nothing survives a restart: work lost that way (a
session end) is redone at start-up by its owner.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from memory.jobs._traced import traced
from memory.jobs._types import (
    BackgroundQueue,
    FailedJob,
    JobSpec,
    QueueStatus,
    error_line,
    import_function,
)

__all__ = ["InProcessQueue"]

logger = logging.getLogger(__name__)


class InProcessQueue(BackgroundQueue):
    """One daemon thread running jobs one at a time, in enqueue order."""

    def __init__(
        self,
        resolve: Callable[[str], Callable[..., Any]] | None = None,
        *,
        retries: int = 3,
        backoff: Sequence[float] = (1.0, 5.0, 15.0),
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._resolve = resolve or import_function
        self._retries = retries
        self._backoff = tuple(backoff) or (0.0,)
        self._sleep = sleep
        self._cond = threading.Condition()
        self._pending: deque[JobSpec] = deque()
        self._live: set[str] = set()
        self._failed: dict[str, tuple[JobSpec, FailedJob]] = {}
        self._enqueued = 0
        self._done = 0
        self._state = "idle"
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="chorus-jobs", daemon=True)
        self._thread.start()

    def enqueue(self, job: JobSpec) -> None:
        with self._cond:
            if self._closed:
                logger.error("queue closed; job %s (%s) dropped", job.job_id, job.func)
                return
            if job.job_id in self._live:
                logger.debug("job %s already waiting; duplicate ignored", job.job_id)
                return
            self._failed.pop(job.job_id, None)
            self._live.add(job.job_id)
            self._pending.append(job)
            self._enqueued += 1
            self._cond.notify_all()

    def status(self) -> QueueStatus:
        with self._cond:
            return QueueStatus(
                backend="in-process",
                queued=len(self._pending),
                started=int(self._state == "running"),
                scheduled=int(self._state == "backoff"),
                failed=len(self._failed),
                failed_jobs=[failed for _, failed in self._failed.values()],
            )

    def retry_failed(self) -> int:
        with self._cond:
            specs = [spec for spec, _ in self._failed.values()]
            self._failed.clear()
        for spec in specs:
            self.enqueue(spec)
        return len(specs)

    def flush(self, timeout: float | None = None) -> bool:
        if threading.current_thread() is self._thread:
            logger.warning("flush() called from a job; it would wait for itself")
            return False
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            target = self._enqueued
            while self._done < target:
                if not self._thread.is_alive():
                    return False
                wait = 1.0 if deadline is None else min(1.0, deadline - time.monotonic())
                if wait <= 0:
                    return False
                self._cond.wait(wait)
        return True

    def close(self, timeout: float = 5.0, *, drain: bool = True) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout)
        if self._thread.is_alive():
            with self._cond:
                left = len(self._pending)
            logger.warning(
                "background jobs still running after %.1fs; %d not started", timeout, left
            )

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if not self._pending:
                    return
                job = self._pending.popleft()
                self._state = "running"
            try:
                self._execute(job)
            finally:
                with self._cond:
                    self._live.discard(job.job_id)
                    self._state = "idle"
                    self._done += 1
                    self._cond.notify_all()

    def _execute(self, job: JobSpec) -> None:
        for attempt in range(self._retries + 1):
            try:
                with traced(job.func, job.session_id, job.trace):
                    self._resolve(job.func)(*job.args)
                return
            except Exception as exc:
                if attempt == self._retries:
                    logger.exception("job %s (%s) failed for good", job.job_id, job.func)
                    failed = FailedJob(
                        job.job_id,
                        job.func,
                        job.session_id,
                        error_line(f"{type(exc).__name__}: {exc}"),
                        time.time(),
                    )
                    with self._cond:
                        self._failed[job.job_id] = (job, failed)
                    return
                delay = self._backoff[min(attempt, len(self._backoff) - 1)]
                logger.warning(
                    "job %s (%s) failed with %s; retry %d/%d in %.1fs",
                    job.job_id,
                    job.func,
                    type(exc).__name__,
                    attempt + 1,
                    self._retries,
                    delay,
                )
            with self._cond:
                self._state = "backoff"
            self._sleep(delay)
            with self._cond:
                self._state = "running"

"""The job ledger: every background job, in the database, until it is done.

Redis carries jobs to the workers; the ``queue_jobs`` table says which jobs
exist and which are done. A job is recorded (``pending``) before it goes
anywhere near Redis, ``running`` while a worker holds it, and ``done`` (or
``failed``, for good) when it ended. ``RQQueue.reconcile`` sends every job not
done whose Redis copy vanished again, so a Redis that lost its data loses no
job.

Jobs of one session take the session's lease (``queue_leases``) before they
run. Each grant raises the lease's *epoch*; a job commits (its step marks in
``JobState``, its ledger row) only while its epoch is the current one, so a
worker that was paused past its lease and resumed cannot commit anything: its
run is discarded and the job's new holder does the work. A lease is kept alive
by its worker (``renew``) and taken over once it expired, or at once when its
holder is a process of this host that no longer exists.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from memory.errors import JobQueueError, StaleLeaseError
from memory.jobs._types import JobSpec
from memory.tables import Tables

__all__ = [
    "ALREADY_DONE",
    "LEASES_SCHEMA",
    "NOT_RECORDED",
    "Fence",
    "JobLedger",
    "current_fence",
    "fenced",
    "owner_name",
]

logger = logging.getLogger(__name__)

PENDING, RUNNING, DONE, FAILED = "pending", "running", "done", "failed"
NOT_RECORDED, ALREADY_DONE = -1, 0
"""What ``take_lease`` returns instead of an epoch (epochs start at 1)."""
KEEP_DONE = 7 * 24 * 3600.0
"""Seconds a done or failed row stays in the ledger (``prune``)."""

LEASES_SCHEMA = """
CREATE TABLE IF NOT EXISTS queue_leases (
    session_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    job_id TEXT NOT NULL,
    epoch BIGINT NOT NULL,
    expires_at {real} NOT NULL
)
"""
"""The per-session leases; ``JobState`` creates it too, as its writes check it."""

_JOBS = """
CREATE TABLE IF NOT EXISTS queue_jobs (
    job_id TEXT PRIMARY KEY,
    seq BIGINT NOT NULL,
    session_id TEXT NOT NULL,
    func TEXT NOT NULL,
    args TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_epoch BIGINT NOT NULL DEFAULT 0,
    created_at {real} NOT NULL,
    updated_at {real} NOT NULL
)
"""
_INDEXES = (
    "CREATE INDEX IF NOT EXISTS queue_jobs_state ON queue_jobs (state, seq)",
    "CREATE INDEX IF NOT EXISTS queue_jobs_seq ON queue_jobs (seq)",
)


def _schema(real: str) -> tuple[str, ...]:
    return (_JOBS.format(real=real), *_INDEXES, LEASES_SCHEMA.format(real=real))


@dataclass(frozen=True)
class Fence:
    """The lease a running job holds: its writes count only while ``epoch`` is current."""

    session_id: str
    epoch: int


_FENCE: ContextVar[Fence | None] = ContextVar("chorus_job_fence", default=None)


def current_fence() -> Fence | None:
    """The lease of the job running in this context (None outside a leased job)."""
    return _FENCE.get()


@contextmanager
def fenced(fence: Fence) -> Iterator[None]:
    token = _FENCE.set(fence)
    try:
        yield
    finally:
        _FENCE.reset(token)


def owner_name(worker: str) -> str:
    """A lease owner: host, pid and worker name (a dead local holder is seen at once)."""
    return f"{socket.gethostname()}:{os.getpid()}:{worker}"


def _holder_gone(owner: str) -> bool:
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def check_fence(conn: object, fence: Fence) -> None:
    """Raise ``StaleLeaseError`` unless ``fence`` is its session's current lease."""
    row = conn.execute(  # type: ignore[attr-defined]
        "SELECT epoch FROM queue_leases WHERE session_id = ?", (fence.session_id,)
    ).fetchone()
    if row is None or int(row[0]) != fence.epoch:
        raise StaleLeaseError(
            f"the lease of session {fence.session_id} moved on (epoch {fence.epoch} is stale)"
        )


class JobLedger(Tables):
    """``queue_jobs`` and ``queue_leases`` (SQLite or PostgreSQL); safe to share between threads."""

    SCHEMA = _schema("REAL")
    SCHEMA_PG = _schema("DOUBLE PRECISION")
    ERROR = JobQueueError
    WHAT = "job ledger"
    SYNCHRONOUS = "NORMAL"
    """A power cut may forget the last marks (a job then runs again: jobs are idempotent);
    a job's record reaches the disk with the outbox row written right after it."""

    def record(self, job: JobSpec) -> bool:
        """Keep ``job`` until it is done; False when it is already waiting or running.

        A job that is done or failed is recorded again (it runs again), behind
        every job recorded so far.
        """
        args = json.dumps(list(job.args), separators=(",", ":"))
        now = time.time()
        with self._locked(write=True) as conn:
            row = conn.execute(
                "SELECT state FROM queue_jobs WHERE job_id = ?", (job.job_id,)
            ).fetchone()
            if row is not None and row[0] in (PENDING, RUNNING):
                return False
            (seq,) = conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM queue_jobs").fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO queue_jobs (job_id, seq, session_id, func, args, description,"
                    " state, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT DO NOTHING",
                    (job.job_id, seq, job.session_id, job.func, args, job.description, PENDING,
                     now, now),
                )  # fmt: skip
            else:
                conn.execute(
                    "UPDATE queue_jobs SET seq = ?, func = ?, args = ?, description = ?,"
                    " state = ?, updated_at = ? WHERE job_id = ?",
                    (seq, job.func, args, job.description, PENDING, now, job.job_id),
                )
        return True

    def state_of(self, job_id: str) -> str | None:
        with self._locked() as conn:
            row = conn.execute(
                "SELECT state FROM queue_jobs WHERE job_id = ?", (job_id,)
            ).fetchone()
        return None if row is None else str(row[0])

    def unfinished(self, older_than: float = 0.0) -> list[JobSpec]:
        """Jobs neither done nor failed, oldest first, last recorded ``older_than`` seconds ago."""
        with self._locked() as conn:
            rows = conn.execute(
                "SELECT func, args, session_id, job_id, description FROM queue_jobs"
                " WHERE state IN (?, ?) AND updated_at <= ? ORDER BY seq, job_id",
                (PENDING, RUNNING, time.time() - older_than),
            ).fetchall()
        return [
            JobSpec(func, tuple(json.loads(args)), session_id, job_id, description)
            for func, args, session_id, job_id, description in rows
        ]

    def set_state(self, job_id: str, state: str) -> None:
        with self._locked(write=True) as conn:
            conn.execute(
                "UPDATE queue_jobs SET state = ?, updated_at = ? WHERE job_id = ?",
                (state, time.time(), job_id),
            )

    def take_lease(self, session_id: str, job_id: str, owner: str, ttl: float) -> int | None:
        """The session's lease for ``job_id``: its new epoch, or None while another holds it.

        ``NOT_RECORDED`` for a job the ledger does not know, ``ALREADY_DONE`` for one done.
        """
        now = time.time()
        with self._locked(write=True) as conn:
            job = conn.execute(
                "SELECT state FROM queue_jobs WHERE job_id = ?", (job_id,)
            ).fetchone()
            if job is None or job[0] == DONE:
                return NOT_RECORDED if job is None else ALREADY_DONE
            row = conn.execute(
                "SELECT owner, epoch, expires_at FROM queue_leases WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            if row is None:
                epoch = 1
                taken = conn.execute(
                    "INSERT INTO queue_leases (session_id, owner, job_id, epoch, expires_at)"
                    " VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING epoch",
                    (session_id, owner, job_id, epoch, now + ttl),
                ).fetchone()
            else:
                holder, old, expires = str(row[0]), int(row[1]), float(row[2])
                if holder and holder != owner and expires > now and not _holder_gone(holder):
                    return None
                epoch = old + 1
                taken = conn.execute(
                    "UPDATE queue_leases SET owner = ?, job_id = ?, epoch = ?, expires_at = ?"
                    " WHERE session_id = ? AND epoch = ? RETURNING epoch",
                    (owner, job_id, epoch, now + ttl, session_id, old),
                ).fetchone()
            if taken is None:
                return None
            conn.execute(
                "UPDATE queue_jobs SET state = ?, attempts = attempts + 1, lease_owner = ?,"
                " lease_epoch = ?, updated_at = ? WHERE job_id = ?",
                (RUNNING, owner, epoch, now, job_id),
            )
        return epoch

    def renew(self, owner: str, ttl: float) -> int:
        """Keep every lease ``owner`` holds for ``ttl`` more seconds; returns how many."""
        with self._locked(write=True) as conn:
            cursor = conn.execute(
                "UPDATE queue_leases SET expires_at = ? WHERE owner = ?", (time.time() + ttl, owner)
            )
        return int(cursor.rowcount)

    def finish(self, job_id: str, fence: Fence, state: str = DONE) -> None:
        """End ``job_id`` as ``state`` and free its lease; ``StaleLeaseError`` if it moved on.

        The lease keeps its epoch (it only expires), so a stale holder stays stale.
        """
        with self._locked(write=True) as conn:
            check_fence(conn, fence)
            conn.execute(
                "UPDATE queue_jobs SET state = ?, lease_owner = NULL, updated_at = ?"
                " WHERE job_id = ?",
                (state, time.time(), job_id),
            )
            conn.execute(
                "UPDATE queue_leases SET owner = '', expires_at = 0 WHERE session_id = ?",
                (fence.session_id,),
            )

    def prune(self, keep: float = KEEP_DONE) -> int:
        """Forget done and failed rows older than ``keep`` seconds; returns how many."""
        with self._locked(write=True) as conn:
            cursor = conn.execute(
                "DELETE FROM queue_jobs WHERE state IN (?, ?) AND updated_at < ?",
                (DONE, FAILED, time.time() - keep),
            )
        return int(cursor.rowcount)

    def count(self, state: str) -> int:
        with self._locked() as conn:
            (n,) = conn.execute(
                "SELECT COUNT(*) FROM queue_jobs WHERE state = ?", (state,)
            ).fetchone()
        return int(n)

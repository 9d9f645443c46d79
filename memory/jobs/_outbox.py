"""Outbox: a durable FIFO of background jobs that could not reach Redis yet.

``OutboxRelay`` hands jobs to a submit function (``RQQueue``'s enqueue into
Redis); while that fails with a connection error the jobs wait in the
``Outbox`` and move, oldest first, once it works again.

The rows live in their own table, ``queue_outbox``, so the file can be the
``state.db`` that other tables share: the table is created with ``CREATE TABLE
IF NOT EXISTS`` and nothing else in the file is touched. Arguments are stored
as JSON (a tuple nested inside the arguments comes back as a list).

A row is deleted only after its job was enqueued, so a crash in between enqueues
the job a second time on the next drain. Job ids are deterministic and the job
functions idempotent, which makes that harmless.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable

from memory.errors import JobQueueError
from memory.jobs._types import JobSpec
from memory.sqlite_tables import SQLiteTables

__all__ = ["Outbox", "OutboxRelay"]

logger = logging.getLogger(__name__)

RECONNECT_DELAY = 1.0
"""Seconds after a failed submit during which ``send`` goes straight to the outbox."""

DRAIN_BATCH = 100
"""Rows moved per lock hold; a ``send`` waits for at most one batch."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS queue_outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    func TEXT NOT NULL,
    args TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL
)
"""


class Outbox(SQLiteTables):
    """A FIFO of ``JobSpec`` rows in one SQLite file; safe to share between threads."""

    SCHEMA = (_SCHEMA,)
    ERROR = JobQueueError
    WHAT = "queue outbox"

    def put(self, job: JobSpec) -> int:
        """Append ``job``; returns its row id (ids only grow, so they give the order)."""
        args = json.dumps(list(job.args), separators=(",", ":"))
        with self._locked(write=True) as conn:
            cursor = conn.execute(
                "INSERT INTO queue_outbox (job_id, session_id, func, args, description, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (job.job_id, job.session_id, job.func, args, job.description, time.time()),
            )
            row_id = cursor.lastrowid
        if row_id is None:  # pragma: no cover - sqlite always sets it after an INSERT
            raise JobQueueError("outbox insert returned no row id")
        return row_id

    def pending(self, limit: int | None = None) -> list[tuple[int, JobSpec]]:
        """The rows still to send, oldest first (at most ``limit`` of them)."""
        sql = "SELECT id, func, args, session_id, job_id, description FROM queue_outbox ORDER BY id"
        params: tuple[int, ...] = ()
        if limit is not None:
            sql += " LIMIT ?"
            params = (limit,)
        with self._locked() as conn:
            rows = conn.execute(sql, params).fetchall()
        return [
            (
                row_id,
                JobSpec(
                    func=func,
                    args=tuple(json.loads(args)),
                    session_id=session_id,
                    job_id=job_id,
                    description=description,
                ),
            )
            for row_id, func, args, session_id, job_id, description in rows
        ]

    def delete(self, row_id: int) -> None:
        """Forget a row once its job has been handed over; an unknown id is ignored."""
        with self._locked(write=True) as conn:
            conn.execute("DELETE FROM queue_outbox WHERE id = ?", (row_id,))

    def count(self) -> int:
        with self._locked() as conn:
            (n,) = conn.execute("SELECT COUNT(*) FROM queue_outbox").fetchone()
        return int(n)


class OutboxRelay:
    """Sends jobs through ``submit``, parking them in ``outbox`` while it fails.

    ``errors`` are the exception types that mean "the target is unreachable";
    they are logged once per outage. While the outbox holds anything, new jobs
    go there too (after one cheap drain attempt), so the order is kept. Calls to
    ``submit`` are serialised by one lock.
    """

    def __init__(
        self,
        outbox: Outbox,
        submit: Callable[[JobSpec], None],
        *,
        errors: tuple[type[Exception], ...],
        target: str,
        reconnect_delay: float = RECONNECT_DELAY,
    ) -> None:
        self._outbox = outbox
        self._submit = submit
        self._errors = errors
        self._target = target
        self._reconnect_delay = reconnect_delay
        self._lock = threading.Lock()
        self._down = False
        self._retry_at = 0.0
        self._closed = threading.Event()
        self._drainer: threading.Thread | None = None

    @property
    def reachable(self) -> bool:
        """False from a failed submit until the next one that works."""
        return not self._down

    def send(self, job: JobSpec) -> None:
        """Submit ``job`` or store it; never raises for an unreachable target."""
        if self._closed.is_set():
            logger.error("queue closed; job %s (%s) dropped", job.job_id, job.func)
            return
        with self._lock:
            if self.pending() and not self._cooling_down():
                self._drain_batch()
            if self.pending() or self._cooling_down():
                self._store(job)
                return
            try:
                self._submit(job)
            except self._errors as exc:
                self._mark_down(exc)
                self._store(job)
            else:
                self._mark_up()

    def drain(self) -> int:
        """Submit stored jobs oldest first, deleting each row after its submit worked.

        A crash between a submit and the delete submits that job again on the
        next drain: harmless with deterministic ids and idempotent job functions.
        """
        moved, more = 0, True
        while more and not self._closed.is_set():
            with self._lock:
                n, more = self._drain_batch()
            moved += n
        if moved:
            logger.info("moved %d background jobs from the outbox to %s", moved, self._target)
        return moved

    def start(self, interval: float = 5.0) -> None:
        """Drain now and every ``interval`` seconds, in a daemon thread, until ``close()``."""
        if self._drainer is not None:
            return

        def loop() -> None:
            while not self._closed.is_set():
                if self.pending():
                    self.drain()
                self._closed.wait(interval)

        self._drainer = threading.Thread(target=loop, name="chorus-outbox", daemon=True)
        self._drainer.start()

    def pending(self) -> int:
        """Rows waiting in the outbox (0 when it cannot be read)."""
        try:
            return self._outbox.count()
        except JobQueueError:
            logger.exception("cannot read the outbox")
            return 0

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until the outbox is empty; False on timeout or after ``close()``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._closed.is_set():
            if self.pending():
                self.drain()
            if not self.pending():
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.1)
        return False

    def close(self, timeout: float = 5.0, *, drain: bool = True) -> None:
        """One last drain attempt (unless ``drain`` is False: a process that only looks),
        stop the drainer, close the outbox; rows stay on disk."""
        if self._closed.is_set():
            return
        if drain and self.pending():
            with self._lock:
                self._drain_batch()
        self._closed.set()
        if self._drainer is not None:
            self._drainer.join(timeout)
        with self._lock:
            left = self.pending()
            if left:
                logger.warning("%d background jobs stay in the outbox for the next start", left)
            self._outbox.close()

    def _drain_batch(self) -> tuple[int, bool]:
        try:
            rows = self._outbox.pending(limit=DRAIN_BATCH)
        except JobQueueError:
            logger.exception("cannot read the outbox")
            return 0, False
        for moved, (row_id, job) in enumerate(rows):
            try:
                self._submit(job)
            except self._errors as exc:
                self._mark_down(exc)
                return moved, False
            self._mark_up()
            try:
                self._outbox.delete(row_id)
            except JobQueueError:
                logger.exception("cannot delete outbox row %d", row_id)
                return moved + 1, False
        return len(rows), len(rows) == DRAIN_BATCH

    def _store(self, job: JobSpec) -> None:
        try:
            self._outbox.put(job)
        except JobQueueError:
            logger.exception("cannot store job %s in the outbox; dropped", job.job_id)

    def _cooling_down(self) -> bool:
        return self._down and time.monotonic() < self._retry_at

    def _mark_down(self, exc: Exception) -> None:
        self._retry_at = time.monotonic() + self._reconnect_delay
        if not self._down:
            self._down = True
            logger.warning(
                "%s unreachable (%s); background jobs wait in the outbox",
                self._target,
                type(exc).__name__,
            )

    def _mark_up(self) -> None:
        if self._down:
            self._down = False
            logger.info("%s reachable again", self._target)

"""Background jobs: one small interface, run in-process or as rq jobs on Redis.

A job is a ``JobSpec``: the dotted path of a module-level function, plain
JSON-serialisable arguments (ids, not objects), the session it belongs to and
a deterministic id. Jobs of one session run in the order they were enqueued.

``InProcessQueue``
    One worker thread runs every job in enqueue order; a failing job is retried
    after a backoff, then kept in a failed list. Used when no Redis is set up.
``RQQueue``
    rq jobs on Redis, run by ``chorus worker`` processes, with a SQLite
    ``Outbox`` for the time Redis is unreachable. Loaded (with ``redis`` and
    ``rq``) only when asked for.

With Redis, a ``JobLedger`` in the database keeps every job until it is done
(Redis is only the transport: what it loses is sent again) and runs the jobs of
one session under a fenced lease, so a paused worker's late run commits nothing.

Enqueueing an id that is already waiting or running does nothing; enqueueing an
id that finished or failed runs it again. A job can still run twice (an outbox
drain interrupted between enqueue and delete, a worker that died mid-job), so
job functions must be idempotent. ``JobState`` is what they remember between
runs (the steps it finished).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memory.jobs._inprocess import InProcessQueue
from memory.jobs._ledger import JobLedger
from memory.jobs._outbox import Outbox, OutboxRelay
from memory.jobs._rq_observe import OUTCOMES, JobObserver, Watch, WorkerHealth
from memory.jobs._state import JobState
from memory.jobs._traced import JobTracer, trace_jobs, traced
from memory.jobs._types import (
    BackgroundQueue,
    FailedJob,
    JobSpec,
    QueueStatus,
    error_line,
    import_function,
    mask_url,
)

if TYPE_CHECKING:
    from memory.jobs._rq import RQQueue

__all__ = [
    "OUTCOMES",
    "BackgroundQueue",
    "FailedJob",
    "InProcessQueue",
    "JobLedger",
    "JobObserver",
    "JobSpec",
    "JobState",
    "JobTracer",
    "Outbox",
    "OutboxRelay",
    "QueueStatus",
    "RQQueue",
    "Watch",
    "WorkerHealth",
    "error_line",
    "import_function",
    "mask_url",
    "trace_jobs",
    "traced",
]


def __getattr__(name: str) -> Any:
    if name == "RQQueue":
        from memory.jobs._rq import RQQueue

        return RQQueue
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

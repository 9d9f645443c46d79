"""What background jobs remember between runs, beside the transcripts (SQLite or PostgreSQL).

The *ledger* makes job functions idempotent: a step of a job (``flush:<id>``,
``sync:<id>:<turn>``…) is marked done once it succeeded, and a retried or
duplicated job skips every step already marked. (A ``prefetched_context`` table
of earlier versions may remain in old files, unused.)

A step marked by a job that holds its session's lease (``memory.jobs._ledger``)
counts only while that lease is current: a run whose lease moved on to another
run gets ``StaleLeaseError`` and marks nothing.

Each process opens its own connection; SQLite (WAL) or PostgreSQL serialises the
writers, and the primary key decides which of two racing ``mark_done`` wins.
"""

from __future__ import annotations

import logging
import time

from memory.jobs._ledger import LEASES_SCHEMA, check_fence, current_fence
from memory.tables import Tables

logger = logging.getLogger(__name__)

_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS job_ledger (
        key TEXT PRIMARY KEY,
        done_at REAL NOT NULL
    )
    """,
    LEASES_SCHEMA.format(real="REAL"),
)

_SCHEMA_PG = (
    """
    CREATE TABLE IF NOT EXISTS job_ledger (
        key TEXT PRIMARY KEY,
        done_at DOUBLE PRECISION NOT NULL
    )
    """,
    LEASES_SCHEMA.format(real="DOUBLE PRECISION"),
)


class JobState(Tables):
    """The ledger of the background jobs of one CHORUS_HOME."""

    SCHEMA = _SCHEMA
    SCHEMA_PG = _SCHEMA_PG
    WHAT = "job state"

    def is_done(self, key: str) -> bool:
        with self._locked() as conn:
            row = conn.execute("SELECT 1 FROM job_ledger WHERE key = ?", (key,)).fetchone()
        return row is not None

    def mark_done(self, key: str, at: float | None = None) -> bool:
        """Record ``key`` as done; False if it already was.

        Inside a leased job, ``StaleLeaseError`` when its lease moved on (nothing is marked).
        """
        fence = current_fence()
        with self._locked(write=fence is not None) as conn:
            if fence is not None:
                check_fence(conn, fence)
            cursor = conn.execute(
                "INSERT INTO job_ledger (key, done_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                (key, time.time() if at is None else at),
            )
        return cursor.rowcount == 1

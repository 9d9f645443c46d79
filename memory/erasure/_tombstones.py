"""Tombstones: who was erased, and when, so nothing of theirs is written back.

A row per erased account (``erasures``): the account and the time, never what
was erased. :meth:`Tombstones.erased_since` tells work that began at a given
time whether its person was erased after it. Today the jobs of an erased
person's sessions are stopped by the erasure itself (their sessions are gone,
so a job finds none and writes nothing) and the durable inbox's copies of their
messages are deleted. A group's turn (a session several people share, which
the erasure keeps for an admin's review) is not synced to the memory provider
when its speaker was erased after writing it (``agent.jobs.sync_turn``).
"""

from __future__ import annotations

from memory.tables import Tables

__all__ = ["Tombstones"]

_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS erasures (
        user_key TEXT PRIMARY KEY,
        erased_at REAL NOT NULL
    )
    """,
)
_SCHEMA_PG = tuple(s.replace(" REAL ", " DOUBLE PRECISION ") for s in _SCHEMA)


class Tombstones(Tables):
    SCHEMA = _SCHEMA
    SCHEMA_PG = _SCHEMA_PG
    WHAT = "erasure tombstones"

    def mark(self, user_key: str, at: float) -> None:
        with self._locked(write=True) as conn:
            conn.execute(
                "INSERT INTO erasures (user_key, erased_at) VALUES (?, ?)"
                " ON CONFLICT (user_key) DO UPDATE SET erased_at = excluded.erased_at",
                (user_key, at),
            )

    def erased_at(self, user_key: str) -> float | None:
        with self._locked() as conn:
            row = conn.execute(
                "SELECT erased_at FROM erasures WHERE user_key = ?", (user_key,)
            ).fetchone()
        return None if row is None else float(row[0])

    def erased_since(self, user_key: str, began: float) -> bool:
        """Whether ``user_key`` was erased at or after ``began`` (work begun then is void)."""
        at = self.erased_at(user_key)
        return at is not None and at >= began

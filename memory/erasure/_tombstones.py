"""Tombstones: who was erased, and when, so nothing of theirs is written back.

A row per erased account (``erasures``). Work that began before the erasure
(a background job, a turn in flight, a restart's recovery) checks
:meth:`Tombstones.erased_since` with the time it began and writes nothing when
the account was erased after it; a message the person sends afterwards starts
clean. The row holds the account and the time only, never what was erased.
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

"""How often a person may take out their data: one ``/export`` per :data:`EXPORT_WINDOW`.

Kept in the shared database (``export_requests``), so every replica and a restart
agree; taking a turn is one transaction (PostgreSQL: under an advisory lock per
person, so two replicas cannot both take it).
"""

from __future__ import annotations

from memory.tables import Tables

__all__ = ["EXPORT_WINDOW", "ExportQuota"]

EXPORT_WINDOW = 3600.0
"""Seconds between two exports of one person."""

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS export_requests (person TEXT PRIMARY KEY, at REAL NOT NULL)",
)
_SCHEMA_PG = (
    "CREATE TABLE IF NOT EXISTS export_requests"
    " (person TEXT PRIMARY KEY, at DOUBLE PRECISION NOT NULL)",
)


class ExportQuota(Tables):
    """When each person last took out their data."""

    SCHEMA = _SCHEMA
    SCHEMA_PG = _SCHEMA_PG
    WHAT = "export requests"

    def take(self, person: str, at: float, window: float = EXPORT_WINDOW) -> float | None:
        """Take ``person``'s turn at ``at``: None when taken, else when the next one is due."""
        with self._locked(write=True) as conn:
            if self.is_postgres:
                conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtext(?))", (f"export_requests:{person}",)
                )
            row = conn.execute(
                "SELECT at FROM export_requests WHERE person = ?", (person,)
            ).fetchone()
            if row is not None and at < float(row[0]) + window:
                return float(row[0]) + window
            conn.execute(
                "INSERT INTO export_requests (person, at) VALUES (?, ?)"
                " ON CONFLICT (person) DO UPDATE SET at = excluded.at",
                (person, at),
            )
        return None

    def give_back(self, person: str, at: float) -> None:
        """The turn taken at ``at`` delivered nothing (the platform failed): not counted."""
        with self._locked(write=True) as conn:
            conn.execute("DELETE FROM export_requests WHERE person = ? AND at = ?", (person, at))

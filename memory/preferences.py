"""``PreferenceStore``: what each person chose for themselves (``/voice on``…).

One table beside the others (``memory.tables.Tables``), in ``state.db`` or
PostgreSQL: ``person_preferences``, one row per person and setting (``name``),
its ``value`` as text and when it was set. A person is a person key (a linked
person's ``person:…``, else the account's own key); a setting nobody set has
no row, and its default is the caller's. Erasing a person deletes their rows
(``memory.erasure``).
"""

from __future__ import annotations

from collections.abc import Sequence

from memory.errors import PreferenceStoreError
from memory.tables import Tables

__all__ = ["PreferenceStore", "PreferenceStoreError"]

_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS person_preferences (
        person TEXT NOT NULL,
        name TEXT NOT NULL,
        value TEXT NOT NULL,
        set_at REAL NOT NULL,
        PRIMARY KEY (person, name)
    )
    """,
)
_SCHEMA_PG = tuple(s.replace(" REAL", " DOUBLE PRECISION") for s in _SCHEMA)


class PreferenceStore(Tables):
    """Thread-safe; async callers use ``asyncio.to_thread``."""

    SCHEMA = _SCHEMA
    SCHEMA_PG = _SCHEMA_PG
    ERROR = PreferenceStoreError
    WHAT = "preferences"

    def get(self, persons: Sequence[str], name: str) -> str | None:
        """The value of ``name`` set by the first of ``persons`` that set it (a person's key,
        then the account's own, from before it was linked); None when none did."""
        wanted = list(dict.fromkeys(persons))
        if not wanted:
            return None
        marks = ", ".join("?" for _ in wanted)
        with self._locked() as conn:
            rows = conn.execute(
                "SELECT person, value FROM person_preferences"
                f" WHERE name = ? AND person IN ({marks})",
                (name, *wanted),
            ).fetchall()
        found = {str(r[0]): str(r[1]) for r in rows}
        return next((found[p] for p in wanted if p in found), None)

    def set(self, person: str, name: str, value: str, at: float) -> None:
        """Set ``name`` of ``person`` to ``value``."""
        with self._locked(write=True) as conn:
            conn.execute(
                "INSERT INTO person_preferences (person, name, value, set_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (person, name) DO UPDATE SET value = excluded.value,"
                " set_at = excluded.set_at",
                (person, name, value, at),
            )

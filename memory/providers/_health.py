"""How the external memory provider has been doing, for ``chorus memory status``.

Every process that holds providers (the gateway, each ``chorus worker``) records
in ``state.db`` (or the shared PostgreSQL database) when a provider last started
for a session and the last failure of any of its calls: the method and the
exception class, never its message (it may quote memory). One row per provider
and kind, overwritten.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from memory.tables import Tables

__all__ = ["ProviderEvent", "ProviderHealth"]

_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS provider_health (
        provider TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('started', 'failed')),
        method TEXT NOT NULL,
        detail TEXT NOT NULL,
        pid INTEGER NOT NULL,
        at REAL NOT NULL,
        PRIMARY KEY (provider, kind)
    )
    """,
)

_SCHEMA_PG = (
    """
    CREATE TABLE IF NOT EXISTS provider_health (
        provider TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('started', 'failed')),
        method TEXT NOT NULL,
        detail TEXT NOT NULL,
        pid INTEGER NOT NULL,
        at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (provider, kind)
    )
    """,
)


@dataclass(frozen=True)
class ProviderEvent:
    provider: str
    kind: str
    """``"started"`` (initialised for a session) or ``"failed"``."""
    method: str
    detail: str
    """The exception class of a failure, or the agent context a start was for."""
    pid: int
    at: float


class ProviderHealth(Tables):
    SCHEMA = _SCHEMA
    SCHEMA_PG = _SCHEMA_PG
    WHAT = "provider health"

    def _put(self, provider: str, kind: str, method: str, detail: str) -> None:
        with self._locked(write=True) as conn:
            conn.execute(
                "INSERT INTO provider_health (provider, kind, method, detail, pid, at)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (provider, kind) DO UPDATE SET"
                " method = excluded.method, detail = excluded.detail, pid = excluded.pid,"
                " at = excluded.at",
                (provider, kind, method, detail, os.getpid(), time.time()),
            )

    def started(self, provider: str, agent_context: str) -> None:
        self._put(provider, "started", "initialize", agent_context)

    def failed(self, provider: str, method: str, error: str) -> None:
        self._put(provider, "failed", method, error)

    def events(self, provider: str) -> dict[str, ProviderEvent]:
        """The latest ``"started"`` and ``"failed"`` events of ``provider``, by kind."""
        with self._locked() as conn:
            rows = conn.execute(
                "SELECT provider, kind, method, detail, pid, at FROM provider_health"
                " WHERE provider = ?",
                (provider,),
            ).fetchall()
        return {row[1]: ProviderEvent(*row) for row in rows}

"""``ApprovalStore``: tool calls waiting for approval, in ``state.db`` or PostgreSQL.

One table beside the others (``memory.tables.Tables``), ``tool_approvals``: one
row per call a ``tools.policy`` rule answered with ``ask``: who is asked (a
person, or ``admins``), the tool, its arguments, and its status — ``pending``
until someone decides (``approved``/``denied``), the wait runs out
(``timeout``), or the process that waited for it is gone (``expired``). The
row is decided once: ``decide`` changes only a pending row, so two answers (or
an answer and the deadline) never both win.

``owner`` is the process waiting for the answer; after a restart the rows the
old process left pending are taken with ``expire_left_by`` and their people
told.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, replace

from memory.database import Connection, Location
from memory.errors import ApprovalStoreError
from memory.tables import Tables

__all__ = ["Approval", "ApprovalStore", "ApprovalStoreError"]

ID_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"
ID_LENGTH = 6

_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS tool_approvals (
        id TEXT PRIMARY KEY,
        person TEXT NOT NULL,
        asked TEXT NOT NULL,
        platform TEXT NOT NULL,
        chat_id TEXT NOT NULL,
        thread_id TEXT,
        session_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        arguments TEXT NOT NULL,
        owner TEXT NOT NULL,
        status TEXT NOT NULL,
        decided_by TEXT,
        created_at REAL NOT NULL,
        expires_at REAL NOT NULL
    )
    """,
)
_SCHEMA_PG = tuple(s.replace(" REAL ", " DOUBLE PRECISION ") for s in _SCHEMA)
_COLUMNS = (
    "id, person, asked, platform, chat_id, thread_id, session_id, tool, arguments, owner,"
    " status, decided_by, created_at, expires_at"
)


@dataclass(frozen=True, slots=True)
class Approval:
    """One tool call waiting for (or given) an answer."""

    id: str
    person: str
    """Whose call it is (``platform:id``)."""
    asked: str
    """Who may decide: the person's key, or ``admins``."""
    platform: str
    chat_id: str
    thread_id: str | None
    session_id: str
    tool: str
    arguments: str
    owner: str
    status: str
    decided_by: str | None
    created_at: float
    expires_at: float


def _row(row: tuple[object, ...]) -> Approval:
    return Approval(
        str(row[0]),
        str(row[1]),
        str(row[2]),
        str(row[3]),
        str(row[4]),
        None if row[5] is None else str(row[5]),
        str(row[6]),
        str(row[7]),
        str(row[8]),
        str(row[9]),
        str(row[10]),
        None if row[11] is None else str(row[11]),
        float(str(row[12])),
        float(str(row[13])),
    )


class ApprovalStore(Tables):
    """Thread-safe; async callers use ``asyncio.to_thread``."""

    SCHEMA = _SCHEMA
    SCHEMA_PG = _SCHEMA_PG
    ERROR = ApprovalStoreError
    WHAT = "approval store"

    def __init__(self, where: Location) -> None:
        super().__init__(where)

    def create(self, approval: Approval) -> Approval:
        """Store a pending approval under a new short id; the row as stored."""
        with self._locked(write=True) as conn:
            for _ in range(20):
                new_id = "".join(secrets.choice(ID_ALPHABET) for _ in range(ID_LENGTH))
                taken = conn.execute(
                    "SELECT 1 FROM tool_approvals WHERE id = ?", (new_id,)
                ).fetchone()
                if taken is None:
                    break
            else:  # pragma: no cover - 31**6 ids
                raise ApprovalStoreError("no free approval id")
            stored = replace(approval, id=new_id, status="pending", decided_by=None)
            _insert(conn, stored)
        return stored

    def get(self, approval_id: str) -> Approval | None:
        with self._locked() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM tool_approvals WHERE id = ?", (approval_id,)
            ).fetchone()
        return None if row is None else _row(tuple(row))

    def decide(self, approval_id: str, status: str, by: str | None) -> bool:
        """Settle a pending approval; False when it was not pending (any more)."""
        with self._locked(write=True) as conn:
            cursor = conn.execute(
                "UPDATE tool_approvals SET status = ?, decided_by = ?"
                " WHERE id = ? AND status = 'pending'",
                (status, by, approval_id),
            )
        return cursor.rowcount > 0

    def expire_left_by(self, owner: str, past: float | None = None) -> list[Approval]:
        """Mark ``expired`` every pending approval another process waited for (it is gone:
        its turn cannot resume) — with ``past`` (several replicas, others still waiting),
        only those whose deadline is before it; the rows so marked."""
        with self._locked(write=True) as conn:
            rows = conn.execute(
                f"UPDATE tool_approvals SET status = 'expired'"
                f" WHERE status = 'pending' AND owner <> ? AND expires_at < ?"
                f" RETURNING {_COLUMNS}",
                (owner, float("inf") if past is None else past),
            ).fetchall()
        return [_row(tuple(r)) for r in rows]


def _fields() -> tuple[str, ...]:
    return tuple(c.strip() for c in _COLUMNS.split(","))


def _insert(conn: Connection, a: Approval) -> None:
    conn.execute(
        f"INSERT INTO tool_approvals ({_COLUMNS}) VALUES ({', '.join('?' * len(_fields()))})",
        tuple(getattr(a, f) for f in _fields()),
    )

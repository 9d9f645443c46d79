"""Writes to the shared MEMORY.md waiting for an admin's review.

Under ``memory.shared_writes: review`` a non-admin session's write to target
``memory`` is staged here (who, when, session, action, content) instead of
being applied; an admin approves or rejects it. Approval applies it through
``MemoryStore`` — the same threat scan and limits, against MEMORY.md as it is
at approval time.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Literal

from memory.sqlite_tables import SQLiteTables
from memory.store._store import MemoryResult, MemoryStore

logger = logging.getLogger(__name__)

Status = Literal["pending", "approved", "rejected", "failed"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS staged_memory_writes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    action TEXT NOT NULL,
    content TEXT NOT NULL DEFAULT '',
    old_text TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    decided_by TEXT,
    decided_at REAL,
    result TEXT
)
"""


@dataclass(frozen=True)
class StagedWrite:
    id: int
    user_key: str
    session_id: str
    action: str
    content: str
    old_text: str
    created_at: float
    status: Status
    decided_by: str | None
    decided_at: float | None
    result: str | None

    def describe(self) -> str:
        what = self.content if self.action == "add" else f"{self.old_text!r} → {self.content!r}"
        if self.action == "remove":
            what = repr(self.old_text)
        return f"#{self.id} {self.action} by {self.user_key}: {what}"


class StagedWrites(SQLiteTables):
    SCHEMA = (_SCHEMA,)
    WHAT = "staged memory writes"

    def stage(
        self,
        *,
        user_key: str,
        session_id: str,
        action: str,
        content: str = "",
        old_text: str = "",
        at: float | None = None,
    ) -> int:
        with self._locked() as conn:
            cursor = conn.execute(
                "INSERT INTO staged_memory_writes"
                " (user_key, session_id, action, content, old_text, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (user_key, session_id, action, content, old_text, at or time.time()),
            )
        staged_id = int(cursor.lastrowid or 0)
        logger.info("staged shared-memory %s #%d from %s", action, staged_id, user_key)
        return staged_id

    def pending(self) -> list[StagedWrite]:
        return self._select("WHERE status = 'pending' ORDER BY id")

    def count_pending(self) -> int:
        with self._locked() as conn:
            row = conn.execute(
                "SELECT COUNT(*) FROM staged_memory_writes WHERE status = 'pending'"
            ).fetchone()
        return int(row[0])

    def get(self, staged_id: int) -> StagedWrite | None:
        rows = self._select("WHERE id = ?", (staged_id,))
        return rows[0] if rows else None

    def approve(self, staged_id: int, store: MemoryStore, by: str) -> tuple[bool, str]:
        """Apply one pending write through the store (scan and limits run again)."""
        write = self.get(staged_id)
        if write is None or write.status != "pending":
            return False, f"#{staged_id} is not a pending write"
        result = apply_write(store, write)
        status: Status = "approved" if result["success"] else "failed"
        self._decide(staged_id, status, by, result["message"])
        return result["success"], f"#{staged_id} {status}: {result['message']}"

    def reject(self, staged_id: int, by: str) -> tuple[bool, str]:
        write = self.get(staged_id)
        if write is None or write.status != "pending":
            return False, f"#{staged_id} is not a pending write"
        self._decide(staged_id, "rejected", by, "rejected")
        return True, f"#{staged_id} rejected"

    def _decide(self, staged_id: int, status: Status, by: str, result: str) -> None:
        with self._locked() as conn:
            conn.execute(
                "UPDATE staged_memory_writes SET status = ?, decided_by = ?, decided_at = ?,"
                " result = ? WHERE id = ? AND status = 'pending'",
                (status, by, time.time(), result, staged_id),
            )

    def _select(self, where: str, params: tuple[object, ...] = ()) -> list[StagedWrite]:
        with self._locked() as conn:
            rows = conn.execute(
                "SELECT id, user_key, session_id, action, content, old_text, created_at, status,"
                f" decided_by, decided_at, result FROM staged_memory_writes {where}",
                params,
            ).fetchall()
        return [StagedWrite(*row) for row in rows]


def apply_write(store: MemoryStore, write: StagedWrite) -> MemoryResult:
    if write.action == "add":
        return store.add("memory", write.content)
    if write.action == "replace":
        return store.replace("memory", write.old_text, write.content)
    return store.remove("memory", write.old_text)

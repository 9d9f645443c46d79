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
from memory.store._threats import make_visible

logger = logging.getLogger(__name__)

Status = Literal["pending", "approved", "rejected", "failed"]

MAX_STAGED_CHARS = 2_200
"""Longest text one staged write may carry (the shared MEMORY.md's default size)."""
MAX_PENDING_PER_USER = 10
"""Writes one user may have waiting for review at a time."""
DESCRIBE_CHARS = 300
"""Characters of a staged text a reviewer sees in the list (the rest by id)."""

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

    def describe(self, limit: int = DESCRIBE_CHARS) -> str:
        """One line for a reviewer: hidden characters shown, long text cut (with its length)."""
        content, old = _shown(self.content, limit), _shown(self.old_text, limit)
        what = content if self.action == "add" else f"{old} → {content}"
        if self.action == "remove":
            what = old
        return f"#{self.id} {self.action} by {self.user_key}: {what}"


def _shown(text: str, limit: int) -> str:
    visible = make_visible(text)
    if len(visible) <= limit:
        return visible
    return f"{visible[:limit]}… ({len(text):,} characters)"


class StagingRefused(ValueError):
    """A write that cannot be staged; the message says why, for the model."""


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
        max_chars: int = MAX_STAGED_CHARS,
        max_pending: int = MAX_PENDING_PER_USER,
    ) -> int:
        """Stage one write; ``StagingRefused`` when it is too long or the user has too many."""
        longest = max(len(content), len(old_text))
        if longest > max_chars:
            raise StagingRefused(
                f"That is {longest:,} characters; the shared memory holds {max_chars:,} in all. "
                "Save a short note instead."
            )
        with self._locked(write=True) as conn:
            (waiting,) = conn.execute(
                "SELECT COUNT(*) FROM staged_memory_writes"
                " WHERE user_key = ? AND status = 'pending'",
                (user_key,),
            ).fetchone()
            if waiting >= max_pending:
                raise StagingRefused(
                    f"{waiting} notes from this user already wait for an admin's review; "
                    "no more can be staged until they are decided."
                )
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

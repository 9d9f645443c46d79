"""Deleting one account's rows from the shared tables, store by store.

Each component keeps its tables in the shared database (``state.db`` or
PostgreSQL); a table not created yet (the component never ran) holds nothing.
Transcripts go message by message before their sessions, so the full-text
index rows go with them (SQLite's triggers; PostgreSQL's index is a column of
the row).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from memory.database import Connection
from memory.tables import Tables

__all__ = ["PERSONAL_TABLES", "Sweep", "TableSet"]


@dataclass(frozen=True)
class TableSet:
    """One store of the receipt: its tables and the column naming the account."""

    store: str
    tables: tuple[tuple[str, str], ...]


PERSONAL_TABLES: tuple[TableSet, ...] = (
    TableSet("staged memory writes", (("staged_memory_writes", "user_key"),)),
    TableSet("tool approvals", (("tool_approvals", "person"),)),
    TableSet(
        "usage details",
        (
            ("usage_ledger", "person"),
            ("budget_notices", "person"),
            ("budget_overrides", "person"),
            ("export_requests", "person"),
        ),
    ),
    TableSet("secrets", (("person_secrets", "person"), ("secret_requests", "person"))),
    TableSet("preferences", (("person_preferences", "person"),)),
    TableSet(
        "pairing state",
        (
            ("pairing_codes", "user_key"),
            ("pairing_requests", "user_key"),
            ("pairing_asks", "user_key"),
        ),
    ),
    TableSet(
        "linked accounts",
        (
            ("people", "account"),
            ("people", "person"),
            ("link_codes", "account"),
            ("link_codes", "used_by"),
            ("link_requests", "account"),
        ),
    ),
)


_SENDER_KEYS = ("from", "author", "user")


def sent_by(payload: Any, user_id: str) -> bool:
    """Whether a delivery's JSON names ``user_id`` as its sender, in any platform's shape:
    a top-level ``user_id`` (chorus's own message JSON), or, at any depth, a ``from`` or
    ``author`` object with that ``id`` (Telegram updates, Discord messages) or a ``user``
    naming it (Slack events). A mention of the person in someone else's message is not."""
    if isinstance(payload, dict) and str(payload.get("user_id")) == user_id:
        return True
    return _sender_inside(payload, user_id)


def _sender_inside(payload: Any, user_id: str) -> bool:
    if isinstance(payload, list):
        return any(_sender_inside(item, user_id) for item in payload)
    if not isinstance(payload, dict):
        return False
    for key, value in payload.items():
        if key in _SENDER_KEYS:
            if isinstance(value, dict) and str(value.get("id")) == user_id:
                return True
            if isinstance(value, str | int) and str(value) == user_id:
                return True
        if isinstance(value, dict | list) and _sender_inside(value, user_id):
            return True
    return False


class Sweep(Tables):
    """The shared database, for deletes across components' tables."""

    WHAT = "shared database"

    def _exists(self, conn: Connection, table: str) -> bool:
        if self.is_postgres:
            row = conn.execute("SELECT to_regclass(?)", (table,)).fetchone()
            return row is not None and row[0] is not None
        row = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()
        return row is not None

    def delete_rows(self, tables: TableSet, user_key: str) -> int:
        """Delete ``user_key``'s rows of every table of ``tables``; how many went."""
        removed = 0
        with self._locked(write=True) as conn:
            for table, column in tables.tables:
                if self._exists(conn, table):
                    cur = conn.execute(f"DELETE FROM {table} WHERE {column} = ?", (user_key,))
                    removed += max(cur.rowcount, 0)
        return removed

    def rows(self, table: str, column: str, user_key: str) -> list[dict[str, object]]:
        """``user_key``'s rows of ``table`` as column -> value (none if it does not exist)."""
        with self._locked() as conn:
            if not self._exists(conn, table):
                return []
            found = conn.execute(
                f"SELECT * FROM {table} WHERE {column} = ?", (user_key,)
            ).fetchall()
            return [{name: r[name] for name in r.keys()} for r in found]  # noqa: SIM118

    def delete_deliveries(self, platform: str, user_id: str) -> int:
        """Delete the durable inbox's rows of deliveries ``user_id`` sent on ``platform``
        (settled ones still hold the message; pending ones would be answered after a
        restart); how many went."""
        with self._locked(write=True) as conn:
            if not self._exists(conn, "inbox"):
                return 0
            rows = conn.execute(
                "SELECT receipt, payload FROM inbox WHERE platform = ?", (platform,)
            ).fetchall()
            gone = 0
            for receipt, payload in ((str(r[0]), str(r[1])) for r in rows):
                try:
                    mine = sent_by(json.loads(payload), user_id)
                except ValueError:
                    mine = False
                if mine:
                    conn.execute(
                        "DELETE FROM inbox WHERE platform = ? AND receipt = ?", (platform, receipt)
                    )
                    gone += 1
        return gone

    def delete_transcripts(self, user_key: str) -> int:
        """Delete the sessions of ``user_key`` and every message of them; how many sessions."""
        with self._locked(write=True) as conn:
            if not self._exists(conn, "sessions"):
                return 0
            ids = [
                str(r[0])
                for r in conn.execute(
                    "SELECT id FROM sessions WHERE user_key = ?", (user_key,)
                ).fetchall()
            ]
            for session_id in ids:
                conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
                conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
        return len(ids)

    def delete_ended_before(self, before: float, limit: int = 1000) -> int:
        """Delete up to ``limit`` sessions that ended before ``before``, with their messages."""
        with self._locked(write=True) as conn:
            if not self._exists(conn, "sessions"):
                return 0
            ids = [
                str(r[0])
                for r in conn.execute(
                    "SELECT id FROM sessions WHERE ended_at IS NOT NULL AND ended_at < ?"
                    " ORDER BY ended_at LIMIT ?",
                    (before, limit),
                ).fetchall()
            ]
            for session_id in ids:
                conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
                conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
        return len(ids)

    def shared_sessions(self, user_key: str) -> list[str]:
        """Sessions of others (a group's) holding messages ``user_key`` wrote."""
        with self._locked() as conn:
            if not self._exists(conn, "sessions"):
                return []
            rows = conn.execute(
                "SELECT DISTINCT m.session_id FROM messages AS m JOIN sessions AS s"
                " ON s.id = m.session_id WHERE m.speaker = ? AND s.user_key <> ?"
                " ORDER BY m.session_id",
                (user_key, user_key),
            ).fetchall()
        return [str(r[0]) for r in rows]

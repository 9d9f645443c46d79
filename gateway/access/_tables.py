"""The gateway's own tables: run-time user access, pairing codes and the audit log.

They live in ``state.db`` beside the tables of other modules: every table here is
created with ``CREATE TABLE IF NOT EXISTS`` and nothing else in the file is
touched. The API is synchronous; async callers use ``asyncio.to_thread``. One
connection, guarded by a lock, serves every thread of the process; other
processes open their own and SQLite (WAL) serialises the writers.

Pairing codes are never stored: only their keyed SHA-256 hash (see
``gateway.auth``), so a copy of the file does not let anyone pair.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import astuple, dataclass
from typing import Literal, cast

from gateway.errors import GatewayError
from memory.sqlite_tables import SQLiteTables

__all__ = [
    "AccessRecord",
    "AccessState",
    "AuditEntry",
    "GatewayDB",
    "GatewayDBError",
    "PairingCode",
    "RedeemStatus",
]

logger = logging.getLogger(__name__)

SALT_BYTES = 32
"""Size of the per-install secret that keys the pairing-code hashes."""

CODE_RETENTION = 7 * 24 * 3600.0
"""Seconds an expired or used code is kept, so an admin is told "expired", not "unknown"."""

AUDIT_ARGS_MAX = 500
"""Characters of a command's arguments kept in the audit log."""

AccessState = Literal["allowed", "denied"]
RedeemStatus = Literal["ok", "unknown", "expired", "used"]

_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS gateway_settings (
        key TEXT PRIMARY KEY,
        value BLOB NOT NULL
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS user_access (
        user_key TEXT PRIMARY KEY,
        state TEXT NOT NULL CHECK (state IN ('allowed', 'denied')),
        "by" TEXT NOT NULL,
        at REAL NOT NULL
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS pairing_codes (
        code_hash TEXT PRIMARY KEY,
        user_key TEXT NOT NULL,
        platform TEXT NOT NULL,
        chat_id TEXT NOT NULL,
        created_at REAL NOT NULL,
        expires_at REAL NOT NULL,
        used_at REAL
    )
    """,
    "CREATE INDEX IF NOT EXISTS pairing_codes_user ON pairing_codes (user_key)",
    "CREATE TABLE IF NOT EXISTS pairing_requests (user_key TEXT NOT NULL, at REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS pairing_requests_user ON pairing_requests (user_key, at)",
    "CREATE INDEX IF NOT EXISTS pairing_requests_at ON pairing_requests (at)",
    """
    CREATE TABLE IF NOT EXISTS audit_log (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at REAL NOT NULL,
        actor TEXT NOT NULL,
        command TEXT NOT NULL,
        args TEXT NOT NULL,
        outcome TEXT NOT NULL
    )
    """,
)

_CODE_COLUMNS = "code_hash, user_key, platform, chat_id, created_at, expires_at, used_at"
_SET_ACCESS = 'INSERT OR REPLACE INTO user_access (user_key, state, "by", at) VALUES (?, ?, ?, ?)'


class GatewayDBError(GatewayError):
    """The gateway's tables in ``state.db`` could not be read or written."""


@dataclass(frozen=True, slots=True)
class AccessRecord:
    """A run-time decision about one user, made by an admin."""

    user_key: str
    state: AccessState
    by: str
    at: float


@dataclass(frozen=True, slots=True)
class PairingCode:
    """One issued pairing code; ``code_hash`` is all that is kept of the code."""

    code_hash: str
    user_key: str
    platform: str
    chat_id: str
    created_at: float
    expires_at: float
    used_at: float | None = None


@dataclass(frozen=True, slots=True)
class AuditEntry:
    id: int
    at: float
    actor: str
    command: str
    args: str
    outcome: str


class GatewayDB(SQLiteTables):
    """The gateway's tables in one SQLite file; safe to share between threads."""

    SCHEMA = _SCHEMA
    ERROR = GatewayDBError
    WHAT = "gateway database"

    def install_salt(self) -> bytes:
        """The secret that keys pairing-code hashes; created on first use, then kept."""
        with self._locked(write=True) as conn:
            conn.execute(
                "INSERT OR IGNORE INTO gateway_settings (key, value) VALUES ('pairing_salt', ?)",
                (secrets.token_bytes(SALT_BYTES),),
            )
            row = conn.execute(
                "SELECT value FROM gateway_settings WHERE key = 'pairing_salt'"
            ).fetchone()
        return bytes(row[0])

    def get_access(self, user_key: str) -> AccessRecord | None:
        with self._locked() as conn:
            row = conn.execute(
                'SELECT user_key, state, "by", at FROM user_access WHERE user_key = ?',
                (user_key,),
            ).fetchone()
        return None if row is None else _access(row)

    def set_access(self, user_key: str, state: AccessState, by: str, at: float) -> None:
        with self._locked(write=True) as conn:
            conn.execute(_SET_ACCESS, (user_key, state, by, at))

    def access_records(self) -> list[AccessRecord]:
        with self._locked() as conn:
            rows = conn.execute(
                'SELECT user_key, state, "by", at FROM user_access ORDER BY user_key'
            ).fetchall()
        return [_access(row) for row in rows]

    def take_pairing_quota(self, user_key: str, at: float, window: float, limit: int) -> bool:
        """Record one code request of ``user_key`` unless it made ``limit`` within ``window``."""
        since = at - window
        with self._locked(write=True) as conn:
            conn.execute("DELETE FROM pairing_requests WHERE at <= ?", (since,))
            (count,) = conn.execute(
                "SELECT COUNT(*) FROM pairing_requests WHERE user_key = ? AND at > ?",
                (user_key, since),
            ).fetchone()
            if count >= limit:
                return False
            conn.execute(
                "INSERT INTO pairing_requests (user_key, at) VALUES (?, ?)", (user_key, at)
            )
        return True

    def add_pairing_code(self, code: PairingCode) -> None:
        """Store ``code``; the user's older unused codes stop working from now on."""
        with self._locked(write=True) as conn:
            conn.execute(
                "UPDATE pairing_codes SET expires_at = MIN(expires_at, ?)"
                " WHERE user_key = ? AND used_at IS NULL",
                (code.created_at, code.user_key),
            )
            conn.execute(
                "DELETE FROM pairing_codes WHERE expires_at < ?",
                (code.created_at - CODE_RETENTION,),
            )
            conn.execute(
                f"INSERT INTO pairing_codes ({_CODE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, NULL)",
                astuple(code)[:6],
            )

    def pending_code(self, user_key: str, at: float) -> PairingCode | None:
        """The user's newest code that is neither used nor expired at ``at``."""
        with self._locked() as conn:
            row = conn.execute(
                f"SELECT {_CODE_COLUMNS} FROM pairing_codes"
                " WHERE user_key = ? AND used_at IS NULL AND expires_at > ?"
                " ORDER BY created_at DESC LIMIT 1",
                (user_key, at),
            ).fetchone()
        return None if row is None else PairingCode(*row)

    def redeem_pairing_code(
        self, code_hash: str, by: str, at: float
    ) -> tuple[RedeemStatus, PairingCode | None]:
        """Use a code: in one transaction mark it used and allow its user."""
        with self._locked(write=True) as conn:
            row = conn.execute(
                f"SELECT {_CODE_COLUMNS} FROM pairing_codes WHERE code_hash = ?", (code_hash,)
            ).fetchone()
            if row is None:
                return "unknown", None
            code = PairingCode(*row)
            if code.used_at is not None:
                return "used", code
            if code.expires_at <= at:
                return "expired", code
            conn.execute(
                "UPDATE pairing_codes SET used_at = ? WHERE code_hash = ?", (at, code_hash)
            )
            conn.execute(_SET_ACCESS, (code.user_key, "allowed", by, at))
        return "ok", code

    def audit(self, actor: str, command: str, args: str, outcome: str, at: float) -> int:
        """Append one admin action; returns its id."""
        with self._locked(write=True) as conn:
            cursor = conn.execute(
                "INSERT INTO audit_log (at, actor, command, args, outcome) VALUES (?, ?, ?, ?, ?)",
                (at, actor, command, args[:AUDIT_ARGS_MAX], outcome),
            )
        return int(cursor.lastrowid or 0)

    def audit_entries(self, limit: int = 50) -> list[AuditEntry]:
        """The newest ``limit`` entries, newest first."""
        with self._locked() as conn:
            rows = conn.execute(
                "SELECT id, at, actor, command, args, outcome FROM audit_log"
                " ORDER BY id DESC LIMIT ?",
                (max(0, limit),),
            ).fetchall()
        return [AuditEntry(*row) for row in rows]


def _access(row: tuple[str, str, str, float]) -> AccessRecord:
    user_key, state, by, at = row
    return AccessRecord(user_key, cast(AccessState, state), by, at)

"""``PeopleStore``: which accounts are one person, and the one-time link codes.

Tables beside the others (``memory.tables.Tables``), in ``state.db`` or PostgreSQL:

- ``people``: one row per linked account, ``account -> person``. An account
  without a row is its own person (its key is its person key).
- ``link_codes``: the codes ``/link`` hands out, stored only as an HMAC of the
  code (the caller hashes it, as pairing codes are), the account that asked for
  it, its expiry and when and by whom it was used. A code is used once.
- ``link_requests``: when each account asked for a code (the rate limit).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Literal

from memory.database import Connection
from memory.errors import PeopleStoreError
from memory.tables import Tables

__all__ = [
    "PERSON_PLATFORM",
    "LinkCode",
    "Linked",
    "PeopleStore",
    "PeopleStoreError",
    "RedeemStatus",
]

PERSON_PLATFORM = "person"
"""The platform part of a person key: ``person:<id>`` (no adapter has this name)."""
CODE_RETENTION = 86_400.0
"""Seconds a used or expired link code is kept before it is deleted."""

RedeemStatus = Literal["ok", "unknown", "expired", "used", "same"]

_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS people (
        account TEXT PRIMARY KEY,
        person TEXT NOT NULL,
        linked_at REAL NOT NULL,
        linked_by TEXT NOT NULL
    )
    """,
    "CREATE INDEX IF NOT EXISTS people_person ON people (person)",
    """
    CREATE TABLE IF NOT EXISTS link_codes (
        code_hash TEXT PRIMARY KEY,
        account TEXT NOT NULL,
        created_at REAL NOT NULL,
        expires_at REAL NOT NULL,
        used_at REAL,
        used_by TEXT
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS link_requests (
        account TEXT NOT NULL,
        at REAL NOT NULL
    )
    """,
)
_SCHEMA_PG = tuple(s.replace(" REAL", " DOUBLE PRECISION") for s in _SCHEMA)


@dataclass(frozen=True, slots=True)
class LinkCode:
    code_hash: str
    account: str
    created_at: float
    expires_at: float
    used_at: float | None = None
    used_by: str | None = None


@dataclass(frozen=True, slots=True)
class Linked:
    """What a link did: the person now, and the person keys whose profiles join it."""

    person: str
    joined: tuple[str, ...]
    """The person keys (an account's own key, or an earlier ``person:…``) that are now
    ``person``; empty when the two were one person already."""


class PeopleStore(Tables):
    """Thread-safe; async callers use ``asyncio.to_thread``."""

    SCHEMA = _SCHEMA
    SCHEMA_PG = _SCHEMA_PG
    ERROR = PeopleStoreError
    WHAT = "people store"

    # ------------------------------------------------------------------ people

    def person_of(self, account: str) -> str:
        """The person key of ``account``: its person's, or its own when it is not linked."""
        with self._reading() as conn:  # every message's: never behind this process's writers
            row = conn.execute("SELECT person FROM people WHERE account = ?", (account,)).fetchone()
        return account if row is None else str(row[0])

    def accounts_of(self, person: str) -> list[str]:
        """Every account of ``person`` (an unlinked account's key: just itself), sorted."""
        with self._locked() as conn:
            rows = conn.execute(
                "SELECT account FROM people WHERE person = ? ORDER BY account", (person,)
            ).fetchall()
        return [str(r[0]) for r in rows] or [person]

    def link(self, first: str, second: str, by: str, at: float) -> Linked:
        """Make ``first`` and ``second`` one person (joining their persons when both are
        linked already); the person's key and the keys that joined it."""
        with self._locked(write=True) as conn:
            self._lock_people(conn)
            a, b = _person(conn, first), _person(conn, second)
            if a == b:
                return Linked(a, ())
            joined: tuple[str, ...]
            if _is_person(a):
                person, joined = a, (b,)
            elif _is_person(b):
                person, joined = b, (a,)
            else:
                person, joined = f"{PERSON_PLATFORM}:{secrets.token_hex(8)}", (a, b)
            for key in joined:
                if _is_person(key):
                    conn.execute(
                        "UPDATE people SET person = ?, linked_at = ?, linked_by = ?"
                        " WHERE person = ?",
                        (person, at, by, key),
                    )
                else:
                    conn.execute(
                        "INSERT INTO people (account, person, linked_at, linked_by)"
                        " VALUES (?, ?, ?, ?)",
                        (key, person, at, by),
                    )
        return Linked(person, joined)

    def unlink(self, account: str) -> str | None:
        """Make ``account`` its own person again; the person it left (None: not linked)."""
        with self._locked(write=True) as conn:
            self._lock_people(conn)
            row = conn.execute(
                "DELETE FROM people WHERE account = ? RETURNING person", (account,)
            ).fetchone()
        return None if row is None else str(row[0])

    def _lock_people(self, conn: Connection) -> None:
        if self.is_postgres:  # two links at once are made one after the other
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('chorus:people'))")

    # ------------------------------------------------------------ link codes

    def take_code_quota(self, account: str, at: float, window: float, limit: int) -> bool:
        """Record one code request of ``account`` unless it made ``limit`` within ``window``."""
        since = at - window
        with self._locked(write=True) as conn:
            if self.is_postgres:
                conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtext(?))", (f"link_requests:{account}",)
                )
            conn.execute("DELETE FROM link_requests WHERE at <= ?", (since,))
            (count,) = conn.execute(
                "SELECT COUNT(*) FROM link_requests WHERE account = ? AND at > ?",
                (account, since),
            ).fetchone()
            if count >= limit:
                return False
            conn.execute("INSERT INTO link_requests (account, at) VALUES (?, ?)", (account, at))
        return True

    def add_code(self, code: LinkCode) -> None:
        """Store ``code``; the account's older unused codes stop working from now on."""
        with self._locked(write=True) as conn:
            conn.execute(
                "UPDATE link_codes SET expires_at = ?"
                " WHERE account = ? AND used_at IS NULL AND expires_at > ?",
                (code.created_at, code.account, code.created_at),
            )
            conn.execute(
                "DELETE FROM link_codes WHERE expires_at < ?",
                (code.created_at - CODE_RETENTION,),
            )
            conn.execute(
                "INSERT INTO link_codes (code_hash, account, created_at, expires_at)"
                " VALUES (?, ?, ?, ?)",
                (code.code_hash, code.account, code.created_at, code.expires_at),
            )

    def redeem_code(self, code_hash: str, by: str, at: float) -> tuple[RedeemStatus, str | None]:
        """Use a code for account ``by``: marks it used (once, whoever asks first); the
        status and the account that asked for the code."""
        with self._locked(write=True) as conn:
            row = conn.execute(
                "SELECT account, expires_at, used_at FROM link_codes WHERE code_hash = ?",
                (code_hash,),
            ).fetchone()
            if row is None:
                return "unknown", None
            account, expires_at, used_at = str(row[0]), float(row[1]), row[2]
            if used_at is not None:
                return "used", account
            if expires_at <= at:
                return "expired", account
            if account.partition(":")[0] == by.partition(":")[0]:
                return "same", account
            used = conn.execute(
                "UPDATE link_codes SET used_at = ?, used_by = ?"
                " WHERE code_hash = ? AND used_at IS NULL",
                (at, by, code_hash),
            )
            if used.rowcount != 1:  # another replica took it since the SELECT
                return "used", account
        return "ok", account


def _person(conn: Connection, account: str) -> str:
    row = conn.execute("SELECT person FROM people WHERE account = ?", (account,)).fetchone()
    return account if row is None else str(row[0])


def _is_person(key: str) -> bool:
    return key.startswith(f"{PERSON_PLATFORM}:")

"""``SecretStore``: each person's secrets, sealed, in ``state.db`` or PostgreSQL.

Two tables beside the others (``memory.tables.Tables``):

- ``person_secrets``: one row per person and name; the value only sealed
  (``_crypto``), with the id of the key that sealed it.
- ``secret_requests``: a ``/secret set NAME`` waiting for the person's next
  direct message, one per person, until it expires. It lives in the database,
  not in a process, so the next message finds it on any replica and after a
  restart.

``get``, ``set``, ``delete`` and ``names`` are what tools use to reach a person's
credential (``{person.secret.NAME}``); a person is their key as stored
(``telegram:12345``). Names are ``[A-Z][A-Z0-9_]{0,63}``. Without a key
(``CHORUS_SECRET_KEY``) nothing is stored (``SecretKeyMissing``); a value that
does not open with the key is ``SecretKeyMismatch``, never a crash.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from memory.database import Connection, Location
from memory.errors import SecretKeyMissing, SecretStoreError
from memory.secrets._crypto import SecretKey
from memory.tables import Tables

__all__ = [
    "MAX_VALUE_CHARS",
    "NAME_PATTERN",
    "NO_KEY",
    "SecretRequest",
    "SecretStore",
    "valid_name",
]

NAME_PATTERN = re.compile(r"[A-Z][A-Z0-9_]{0,63}")
"""What a secret's name may be: ``GITHUB_TOKEN``."""
MAX_VALUE_CHARS = 8192
"""The longest value stored."""

NO_KEY = (
    "secrets cannot be stored: CHORUS_SECRET_KEY is not set "
    "(in the environment or CHORUS_HOME/.env; `chorus secrets key` prints one)"
)

_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS person_secrets (
        person TEXT NOT NULL,
        name TEXT NOT NULL,
        sealed TEXT NOT NULL,
        key_id TEXT NOT NULL,
        updated_at REAL NOT NULL,
        PRIMARY KEY (person, name)
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS secret_requests (
        person TEXT PRIMARY KEY,
        chat_id TEXT NOT NULL,
        name TEXT NOT NULL,
        expires_at REAL NOT NULL
    )
    """,
)
_SCHEMA_PG = tuple(s.replace(" REAL ", " DOUBLE PRECISION ") for s in _SCHEMA)


def valid_name(name: str) -> bool:
    return NAME_PATTERN.fullmatch(name) is not None


@dataclass(frozen=True, slots=True)
class SecretRequest:
    """A ``/secret set`` waiting for its value."""

    name: str
    chat_id: str
    expires_at: float


class SecretStore(Tables):
    """Thread-safe; async callers use ``asyncio.to_thread``."""

    SCHEMA = _SCHEMA
    SCHEMA_PG = _SCHEMA_PG
    ERROR = SecretStoreError
    WHAT = "secret store"

    def __init__(self, where: Location, key: SecretKey | None) -> None:
        super().__init__(where)
        self._key = key
        self._waiting_until: float | None = None
        """SQLite: the latest expiry of any request in the file (None: not read yet). Only
        the process that serves a chat makes its requests, so this process's chats can
        have none waiting after it; PostgreSQL (replicas) is always asked."""

    def nothing_waiting(self, now: float) -> bool:
        """True when no request can be waiting at ``now``, known without reading the
        database (so a message needs no look-up); False when one may be."""
        until = self._waiting_until
        return not self.is_postgres and until is not None and until < now

    @property
    def has_key(self) -> bool:
        """Whether secrets can be stored and read (``CHORUS_SECRET_KEY`` is set)."""
        return self._key is not None

    def _need_key(self) -> SecretKey:
        if self._key is None:
            raise SecretKeyMissing(NO_KEY)
        return self._key

    # ------------------------------------------------------------------ the values

    def set(self, person: str, name: str, value: str, now: float) -> None:
        """Seal and store ``value`` as ``person``'s ``name`` (replacing an older one)."""
        key = self._need_key()
        _check_name(name)
        _check_value(value)
        with self._locked(write=True) as conn:
            _put(conn, key, person, name, value, now)

    def get(self, person: str, name: str) -> str | None:
        """``person``'s ``name``, or None when they have not set it."""
        with self._locked() as conn:
            row = conn.execute(
                "SELECT sealed, key_id FROM person_secrets WHERE person = ? AND name = ?",
                (person, name),
            ).fetchone()
        if row is None:
            return None
        return self._need_key().open(person, name, row[0], row[1])

    def delete(self, person: str, name: str) -> bool:
        """Forget ``person``'s ``name``; False when there was none."""
        with self._locked(write=True) as conn:
            cursor = conn.execute(
                "DELETE FROM person_secrets WHERE person = ? AND name = ?", (person, name)
            )
        return cursor.rowcount > 0

    def names(self, person: str) -> list[str]:
        """The names of ``person``'s secrets, sorted (never their values)."""
        with self._locked() as conn:
            rows = conn.execute(
                "SELECT name FROM person_secrets WHERE person = ? ORDER BY name", (person,)
            ).fetchall()
        return [str(row[0]) for row in rows]

    # -------------------------------------------------------------- waiting values

    def request(self, person: str, chat_id: str, name: str, expires_at: float) -> None:
        """``person``'s next message in ``chat_id`` is the value of ``name`` (until
        ``expires_at``); replaces a request they had waiting."""
        self._need_key()
        _check_name(name)
        with self._locked(write=True) as conn:
            conn.execute(
                "INSERT INTO secret_requests (person, chat_id, name, expires_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (person) DO UPDATE SET"
                " chat_id = excluded.chat_id, name = excluded.name,"
                " expires_at = excluded.expires_at",
                (person, chat_id, name, expires_at),
            )
            if self._waiting_until is not None:
                self._waiting_until = max(self._waiting_until, expires_at)

    def pending_in(self, person: str, chat_id: str, now: float) -> SecretRequest | None:
        """The request waiting for ``person``'s next message in ``chat_id``, if any and not
        expired (nothing is taken)."""
        with self._locked() as conn:
            if self._waiting_until is None and not self.is_postgres:
                latest = conn.execute("SELECT MAX(expires_at) FROM secret_requests").fetchone()
                self._waiting_until = -math.inf if latest[0] is None else float(latest[0])
            row = conn.execute(
                "SELECT name, chat_id, expires_at FROM secret_requests"
                " WHERE person = ? AND chat_id = ?",
                (person, chat_id),
            ).fetchone()
        if row is None or float(row[2]) < now:
            return None
        return SecretRequest(str(row[0]), str(row[1]), float(row[2]))

    def fulfil(self, person: str, chat_id: str, value: str, now: float) -> str | None:
        """Store ``value`` under the name ``person``'s request in ``chat_id`` waits for, and
        drop the request, in one transaction (once, of all replicas; a crash leaves both
        as they were). The name; None when no request waits (any more)."""
        key = self._need_key()
        _check_value(value)
        with self._locked(write=True) as conn:
            row = conn.execute(
                "DELETE FROM secret_requests WHERE person = ? AND chat_id = ?"
                " RETURNING name, expires_at",
                (person, chat_id),
            ).fetchone()
            if row is None or float(row[1]) < now:
                return None
            name = str(row[0])
            _put(conn, key, person, name, value, now)
        return name

    def waiting(self, person: str, now: float) -> SecretRequest | None:
        """The request ``person`` has waiting, if any and not expired (nothing is taken)."""
        with self._locked() as conn:
            row = conn.execute(
                "SELECT name, chat_id, expires_at FROM secret_requests WHERE person = ?",
                (person,),
            ).fetchone()
        if row is None or float(row[2]) < now:
            return None
        return SecretRequest(str(row[0]), str(row[1]), float(row[2]))

    def cancel(self, person: str, now: float) -> SecretRequest | None:
        """Drop ``person``'s waiting request; the one dropped (None: none was waiting)."""
        with self._locked(write=True) as conn:
            row = conn.execute(
                "DELETE FROM secret_requests WHERE person = ? RETURNING name, chat_id, expires_at",
                (person,),
            ).fetchone()
        if row is None or float(row[2]) < now:
            return None
        return SecretRequest(str(row[0]), str(row[1]), float(row[2]))


def _put(conn: Connection, key: SecretKey, person: str, name: str, value: str, now: float) -> None:
    conn.execute(
        "INSERT INTO person_secrets (person, name, sealed, key_id, updated_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (person, name) DO UPDATE SET"
        " sealed = excluded.sealed, key_id = excluded.key_id,"
        " updated_at = excluded.updated_at",
        (person, name, key.seal(person, name, value), key.key_id, now),
    )


def _check_value(value: str) -> None:
    if not value or len(value) > MAX_VALUE_CHARS:
        raise SecretStoreError(
            f"a secret's value has 1 to {MAX_VALUE_CHARS} characters, not {len(value)}"
        )


def _check_name(name: str) -> None:
    if not valid_name(name):
        raise SecretStoreError(
            f"{name[:70]!r} is not a secret name: capital letters, digits and _, "
            "starting with a letter, at most 64 (GITHUB_TOKEN)"
        )

"""Pairing requests: what admins were shown of a stranger's request, and how it was decided.

A stranger who is given a pairing code (``Authorizer.decide``) opens a request:
its id (``#id``) stands in the admins' **Approve** / **Deny** buttons, and every
card posted for it (platform, chat, message) is kept, so the cards can be updated
with the decision, after a restart too. At most one request per person is opened
within ``window`` seconds (the admins are not told more often than that). A
request is decided once: the first decision wins, later ones find it decided.

The clear pairing code is never stored here (the card shows it; ``pairing_codes``
keeps only its keyed hash).
"""

from __future__ import annotations

import secrets
from dataclasses import astuple, dataclass, replace
from typing import Literal

from gateway.access._tables import GatewayDBError
from memory.tables import Tables

__all__ = ["PairingCard", "PairingRequest", "PairingRequests", "RequestStatus"]

RequestStatus = Literal["pending", "approved", "denied", "expired"]
ID_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"
ID_LENGTH = 6

_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS pairing_asks (
        id TEXT PRIMARY KEY,
        user_key TEXT NOT NULL,
        user_name TEXT NOT NULL,
        platform TEXT NOT NULL,
        chat_id TEXT NOT NULL,
        created_at REAL NOT NULL,
        status TEXT NOT NULL,
        decided_by TEXT,
        decided_at REAL
    )
    """,
    "CREATE INDEX IF NOT EXISTS pairing_asks_user ON pairing_asks (user_key, created_at)",
    """
    CREATE TABLE IF NOT EXISTS pairing_ask_cards (
        ask_id TEXT NOT NULL,
        platform TEXT NOT NULL,
        chat_id TEXT NOT NULL,
        message_id TEXT NOT NULL
    )
    """,
    "CREATE INDEX IF NOT EXISTS pairing_ask_cards_ask ON pairing_ask_cards (ask_id)",
)
_SCHEMA_PG = tuple(s.replace(" REAL", " DOUBLE PRECISION") for s in _SCHEMA)
_COLUMNS = "id, user_key, user_name, platform, chat_id, created_at, status, decided_by, decided_at"


@dataclass(frozen=True, slots=True)
class PairingRequest:
    """A stranger's request to use the bot, as admins were shown it."""

    id: str
    user_key: str
    user_name: str
    platform: str
    chat_id: str
    """Where they asked (their direct chat with the bot): the decision is told there."""
    created_at: float
    status: RequestStatus = "pending"
    decided_by: str | None = None
    decided_at: float | None = None


@dataclass(frozen=True, slots=True)
class PairingCard:
    """One admin's copy of a request: the message with the buttons."""

    platform: str
    chat_id: str
    message_id: str


class PairingRequests(Tables):
    """The requests and their cards in ``state.db`` (or PostgreSQL); thread-safe, sync."""

    SCHEMA = _SCHEMA
    SCHEMA_PG = _SCHEMA_PG
    ERROR = GatewayDBError
    WHAT = "pairing requests"

    def open(
        self, user_key: str, user_name: str, platform: str, chat_id: str, at: float, window: float
    ) -> PairingRequest | None:
        """A new pending request, or None when ``user_key`` opened one within ``window``."""
        request = PairingRequest(new_id(), user_key, user_name, platform, chat_id, at)
        with self._locked(write=True) as conn:
            if self.is_postgres:  # one person's check and insert are not raced by a replica
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(?))", (f"ask:{user_key}",))
            recent = conn.execute(
                "SELECT 1 FROM pairing_asks WHERE user_key = ? AND created_at > ? LIMIT 1",
                (user_key, at - window),
            ).fetchone()
            if recent is not None:
                return None
            conn.execute(
                f"INSERT INTO pairing_asks ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                astuple(request),
            )
        return request

    def add_card(self, ask_id: str, card: PairingCard) -> None:
        with self._locked(write=True) as conn:
            conn.execute(
                "INSERT INTO pairing_ask_cards (ask_id, platform, chat_id, message_id)"
                " VALUES (?, ?, ?, ?)",
                (ask_id, *astuple(card)),
            )

    def cards(self, ask_id: str) -> list[PairingCard]:
        with self._locked() as conn:
            rows = conn.execute(
                "SELECT platform, chat_id, message_id FROM pairing_ask_cards WHERE ask_id = ?",
                (ask_id,),
            ).fetchall()
        return [PairingCard(*row) for row in rows]

    def get(self, ask_id: str) -> PairingRequest | None:
        with self._locked() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM pairing_asks WHERE id = ?", (ask_id,)
            ).fetchone()
        return None if row is None else PairingRequest(*row)

    def decide(
        self, ask_id: str, status: RequestStatus, by: str | None, at: float, *, force: bool = False
    ) -> bool:
        """Mark a pending request decided; False when it was decided already (unless
        ``force``: the decision could not be carried out, and says so now)."""
        pending = "" if force else " AND status = 'pending'"
        with self._locked(write=True) as conn:
            done = conn.execute(
                "UPDATE pairing_asks SET status = ?, decided_by = ?, decided_at = ?"
                f" WHERE id = ?{pending}",
                (status, by, at, ask_id),
            )
            return bool(done.rowcount == 1)

    def settle_user(
        self, user_key: str, status: RequestStatus, by: str, at: float
    ) -> list[PairingRequest]:
        """Decide every pending request of ``user_key`` (an admin allowed or denied them some
        other way); the requests so decided."""
        with self._locked(write=True) as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM pairing_asks WHERE user_key = ? AND status = 'pending'",
                (user_key,),
            ).fetchall()
            settled = []
            for row in rows:
                done = conn.execute(
                    "UPDATE pairing_asks SET status = ?, decided_by = ?, decided_at = ?"
                    " WHERE id = ? AND status = 'pending'",
                    (status, by, at, row[0]),
                )
                if done.rowcount == 1:
                    settled.append(
                        replace(PairingRequest(*row), status=status, decided_by=by, decided_at=at)
                    )
        return settled

    def forget_user(self, user_key: str) -> None:
        """Remove a person's requests and their cards' records (erasure)."""
        with self._locked(write=True) as conn:
            conn.execute(
                "DELETE FROM pairing_ask_cards WHERE ask_id IN"
                " (SELECT id FROM pairing_asks WHERE user_key = ?)",
                (user_key,),
            )
            conn.execute("DELETE FROM pairing_asks WHERE user_key = ?", (user_key,))


def new_id() -> str:
    return "".join(secrets.choice(ID_ALPHABET) for _ in range(ID_LENGTH))

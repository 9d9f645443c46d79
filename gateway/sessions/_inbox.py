"""The durable inbox: every delivery a platform makes is written down before it is
acknowledged, and crossed off when nothing is left to do for it.

A row is one delivery (a Telegram update, a Slack event, a Discord message) with
the payload the adapter needs to read it again. It is *pending* until the runner
settles it: the answer was delivered, or the message needed none (refused,
ignored, a command answered). After a restart every pending row is taken up
again — answered, or, when it is older than ``sessions.resume_pending_minutes``,
its sender is told it could not be. A redelivered row (Telegram resending an
unconfirmed update, Slack retrying an event) is recognised and not handled twice.
The messages of an answer being streamed are noted too, so an answer cut short
by a crash is finished in the same messages.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gateway.clock import Clock, SystemClock
from gateway.errors import GatewayError
from memory.sqlite_tables import SQLiteTables

logger = logging.getLogger(__name__)

KEEP_SETTLED = 2 * 24 * 3600.0
"""Seconds a settled row is kept, so a late redelivery is still recognised."""
KEEP_PENDING = 7 * 24 * 3600.0
"""Seconds after which even an unsettled row is dropped (its sender was told long ago)."""

_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS inbox (
        platform TEXT NOT NULL,
        receipt TEXT NOT NULL,
        payload TEXT NOT NULL,
        received_at REAL NOT NULL,
        settled_at REAL,
        shown TEXT,
        PRIMARY KEY (platform, receipt)
    )
    """,
    "CREATE INDEX IF NOT EXISTS inbox_pending ON inbox (platform, settled_at, received_at)",
)


class InboxError(GatewayError):
    """The inbox table in ``state.db`` could not be read or written."""


@dataclass(frozen=True, slots=True)
class PendingDelivery:
    platform: str
    receipt: str
    payload: str
    received_at: float
    shown: tuple[str, ...]
    """Ids of the messages an answer to it had been streamed into."""


class Inbox(SQLiteTables):
    """Thread-safe; async callers use ``asyncio.to_thread``."""

    SCHEMA = _SCHEMA
    ERROR = InboxError
    WHAT = "inbox"

    def __init__(self, path: Path, clock: Clock | None = None) -> None:
        super().__init__(path)
        self._clock = clock or SystemClock()

    def take(self, platform: str, receipt: str, payload: str) -> bool:
        return self.take_many(platform, [(receipt, payload)])[0]

    def take_many(self, platform: str, deliveries: Sequence[tuple[str, str]]) -> list[bool]:
        """Record ``(receipt, payload)`` deliveries in one commit; for each, False when it
        was known already (a redelivery, or a repeat within ``deliveries``)."""
        now = self._clock.time()
        new: list[bool] = []
        with self._locked(write=True) as conn:
            for receipt, payload in deliveries:
                cursor = conn.execute(
                    "INSERT OR IGNORE INTO inbox (platform, receipt, payload, received_at)"
                    " VALUES (?, ?, ?, ?)",
                    (platform, receipt, payload, now),
                )
                new.append(cursor.rowcount == 1)
        for (receipt, _), fresh in zip(deliveries, new, strict=True):
            if not fresh:
                logger.debug("%s delivery %s arrived again; not handled twice", platform, receipt)
        return new

    def done(self, platform: str, receipts: Sequence[str]) -> None:
        now = self._clock.time()
        with self._locked(write=True) as conn:
            conn.executemany(
                "UPDATE inbox SET settled_at = ? WHERE platform = ? AND receipt = ?"
                " AND settled_at IS NULL",
                [(now, platform, receipt) for receipt in receipts],
            )

    def shown(self, platform: str, receipts: Sequence[str], message_ids: Sequence[str]) -> None:
        """The messages an answer to these deliveries is being streamed into, so far."""
        value = json.dumps(list(message_ids))
        with self._locked(write=True) as conn:
            conn.executemany(
                "UPDATE inbox SET shown = ? WHERE platform = ? AND receipt = ?",
                [(value, platform, receipt) for receipt in receipts],
            )

    def pending(self, platform: str) -> list[PendingDelivery]:
        """Unsettled deliveries of ``platform``, oldest first."""
        with self._locked() as conn:
            rows = conn.execute(
                "SELECT platform, receipt, payload, received_at, shown FROM inbox"
                " WHERE platform = ? AND settled_at IS NULL ORDER BY received_at, rowid",
                (platform,),
            ).fetchall()
        return [
            PendingDelivery(p, r, payload, at, tuple(json.loads(shown)) if shown else ())
            for p, r, payload, at, shown in rows
        ]

    def is_settled(self, platform: str, receipt: str) -> bool | None:
        """True or False for a known delivery, None for an unknown one."""
        with self._locked() as conn:
            row = conn.execute(
                "SELECT settled_at FROM inbox WHERE platform = ? AND receipt = ?",
                (platform, receipt),
            ).fetchone()
        return None if row is None else row[0] is not None

    def prune(self) -> int:
        """Forget old settled rows (and very old unsettled ones); returns how many."""
        now = self._clock.time()
        with self._locked(write=True) as conn:
            cursor = conn.execute(
                "DELETE FROM inbox WHERE (settled_at IS NOT NULL AND settled_at < ?)"
                " OR received_at < ?",
                (now - KEEP_SETTLED, now - KEEP_PENDING),
            )
        return cursor.rowcount

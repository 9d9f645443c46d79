"""Fencing by epoch: a write of a session's replica is refused once another took it.

``SessionDB.take_epoch`` gives a replica that takes a session over a new, larger
epoch (PostgreSQL's ``session_epochs``). Every write of a turn — a transcript
message, the inbox's notes and settles — checks in its own transaction that its
epoch is still the session's newest, so a replica that stalled past its lease
writes nothing more.
"""

from __future__ import annotations

from memory.database import Connection
from memory.errors import SessionFenced

__all__ = ["Fence", "check_epoch"]

Fence = tuple[str, int]
"""``(session id, epoch)`` a write is made under."""


def check_epoch(conn: Connection, session_id: str, epoch: int) -> None:
    """Refuse the transaction's write unless ``epoch`` is the session's newest (0: none
    was taken); the row stays locked to the end of it, so a takeover waits for the write
    or refuses it. PostgreSQL only."""
    row = conn.execute(
        "SELECT epoch FROM session_epochs WHERE session_id = ? FOR UPDATE", (session_id,)
    ).fetchone()
    newest = 0 if row is None else int(row[0])
    if newest != epoch:
        raise SessionFenced(
            f"a write to session {session_id!r} with epoch {epoch} was refused:"
            f" its epoch is {newest} now (another replica has it)"
        )

"""Opening a session in one trip to the database: its row made (or kept), its system
prompt set when it has none, then its transcript and its record read back, for an
agent that starts or resumes it. A session that continues a conversation finds the
session it follows (its parent) on the way, so the gateway need not ask first."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from memory.transcripts._db import SessionDB
from memory.transcripts._records import SessionRecord, StoredMessage

__all__ = ["OpenedSession", "open_session"]


@dataclass(frozen=True, slots=True)
class OpenedSession:
    messages: list[StoredMessage]
    """The transcript so far, in the order it was appended (empty for a new session)."""
    record: SessionRecord | None
    """The session's row, when it could be read back (a new one may not be visible yet)."""
    follows: tuple[str, str] | None = None
    """``(id, end reason)`` of the session this one follows, when this opening made the
    session and looked its parent up (``follow``)."""


def open_session(
    db: SessionDB,
    session_id: str,
    /,
    *,
    system_prompt: str | None = None,
    follow: bool = False,
    **fields: Any,
) -> OpenedSession:
    """``create_session(session_id, **fields)`` (nothing when it exists), ``system_prompt``
    stored unless the session already has one (a resumed session keeps its own), then
    what the session holds; run as one write, so a burst of new sessions costs one hop
    each.

    ``follow``: a session made now without a ``parent_session_id`` gets the latest
    ended session of its user in its chat and thread (``previous_session``) as its
    parent (``OpenedSession.follows``); an existing one keeps the parent it has."""
    record = db.get_session(session_id)
    follows: tuple[str, str] | None = None
    if record is None:
        if follow and fields.get("parent_session_id") is None:
            where = (fields.get("chat_id"), fields.get("thread_id"))
            follows = db.previous_session(fields["user_key"], fields["platform"], *where)
            if follows is not None:
                fields["parent_session_id"] = follows[0]
        db.create_session(session_id, **fields)
        record = db.get_session(session_id)
    if system_prompt and (record is None or not record.system_prompt):
        db.set_system_prompt(session_id, system_prompt)
        if record is not None:
            record = replace(record, system_prompt=system_prompt)
    return OpenedSession(db.get_messages(session_id), record, follows)

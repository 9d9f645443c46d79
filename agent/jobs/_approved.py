"""``approved_write``: a staged write an admin approved reaches the memory providers.

A write the shared-memory policy held for review (``memory.shared_writes:
review``) did not reach the providers when the model made it: nothing had
changed yet. When an admin approves it, the review enqueues this job for the
session the write was made in; the session's provider gets ``on_memory_write``
as the model's own write would have given it, with ``origin: "review"`` and the
writer as ``speaker``. Like the end-of-session flush it is a write chorus makes,
no turn of the user's: the provider is opened with ``agent_context="flush"``.
"""

from __future__ import annotations

import logging

from agent.jobs._jobs import context
from agent.memory_writes import write_metadata

__all__ = ["approved_write"]

logger = logging.getLogger(__name__)


def approved_write(session_id: str, staged_id: int) -> str:
    """Tell the providers of ``session_id`` about the approved staged write ``staged_id``."""
    ctx = context()
    key = f"approved:{staged_id}"
    if ctx.state.is_done(key):
        return "already done"
    write = ctx.staging.get(staged_id)
    if write is None or write.status != "approved":
        logger.warning("approved_write: staged write #%s is not approved", staged_id)
        return "not approved"
    record = ctx.db.get_session(session_id)
    if record is None:
        logger.warning("approved_write: unknown session %s", session_id)
        return "unknown session"
    manager = ctx.manager_for(record, "flush")
    if manager is not None:
        metadata = write_metadata(
            write.action,
            write.target,
            write.old_text,
            speaker=write.user_key,
            agent_context="flush",
            origin="review",
            session_id=session_id,
        )
        content = write.content or write.old_text
        manager.on_memory_write(write.action, write.target, content, metadata)
    ctx.state.mark_done(key)
    if record.ended_at is not None:
        ctx.release(session_id)  # opened for this write only
    return "mirrored"

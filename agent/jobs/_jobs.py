"""Background job functions: module level, plain arguments, idempotent.

They run on an rq worker (``chorus worker``) or on the in-process worker, never
on the request path. Each takes ids, loads what it needs from SessionDB, and
records every finished step in the job ledger, so a retry or a duplicate
enqueue does no harm:

- ``sync_turn(session_id, position)`` hands one finished turn (by its position
  in the transcript, see ``agent.history.kept_turns``) to the external memory
  provider, with who said it; a turn already withdrawn by ``/undo`` is skipped.
- ``rewind(session_id, position, reason)`` withdraws a synced turn from the
  provider after ``/undo`` or ``/retry``; it runs after that turn's sync.
- ``queue_prefetch(session_id, query)`` lets the provider warm a cache
  for the session's next turn.
- ``end_session(session_id, reason)`` flushes memories (once), calls the
  providers' ``on_session_end`` (once), then marks the session ended.

Jobs of one session run in the order they were enqueued, so a turn reaches the
provider before the next one, and its withdrawal after it.

The process that runs jobs calls ``configure(JobContext(...))`` once at start.
Jobs are enqueued under ``agent.jobs.<name>`` (``JobScheduler``), the names
the package re-exports; queues written by earlier versions hold the same names.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from agent.errors import AgentError
from agent.history import kept_turns, replayed, turn_messages
from agent.jobs._context import JobContext
from agent.jobs._flush import flush_session
from agent.jobs._handoff import summarize_for_handoff
from agent.messages import ChatMessage, as_plain, transcript_messages
from agent.usage import Charge
from memory.erasure import Tombstones
from memory.transcripts import StoredMessage

__all__ = [
    "configure",
    "context",
    "end_session",
    "prefetch",
    "queue_prefetch",
    "rewind",
    "shutdown",
    "sync_turn",
]

logger = logging.getLogger(__name__)

_context: JobContext | None = None
_refresh: Callable[[], object] | None = None


def configure(context: JobContext, *, refresh: Callable[[], object] | None = None) -> None:
    """Install the context job functions in this process use.

    ``refresh`` runs before every job: a worker passes what re-reads changed
    settings into ``context``, so a reload reaches jobs without a restart.
    """
    global _context, _refresh
    _context = context
    _refresh = refresh


def shutdown() -> None:
    """Release what jobs keep open in this process: providers (``shutdown()``), databases."""
    if _context is not None:
        _context.close()


def context() -> JobContext:
    if _context is None:
        raise AgentError("background jobs are not configured in this process")
    if _refresh is not None:
        try:
            _refresh()
        except Exception:
            logger.exception("refreshing the job settings failed; using the ones in effect")
    return _context


def sync_turn(session_id: str, position: int) -> str:
    ctx = context()
    key = f"sync:{session_id}:{position}"
    if ctx.state.is_done(key):
        return "already done"
    record = ctx.db.get_session(session_id)
    if record is None:
        logger.warning("sync_turn: unknown session %s", session_id)
        return "unknown session"
    stored = ctx.db.get_messages(session_id)
    transcript = transcript_messages(stored)
    if position not in kept_turns(transcript):
        return "withdrawn"  # undone before its sync ran: never reaches the provider
    if said_before_erasure(ctx, stored, position):
        ctx.state.mark_done(key)
        return "erased"  # a group's turn of someone erased since: not theirs to learn again
    manager = ctx.manager_for(record, "background")
    if manager is not None:
        turn = turn_messages(transcript, position)
        if turn:
            user, assistant = turn_text(turn)
            manager.sync_turn(
                user,
                assistant,
                session_id=session_id,
                messages=as_plain(turn),
                speaker=speaker_of(stored, position),
            )
    ctx.state.mark_done(key)
    return "synced"


def rewind(session_id: str, position: int, reason: str, user_text: str = "") -> str:
    """Withdraw the turn at ``position`` from the provider, if it had been synced.

    ``user_text``: the turn's user message as it was, for a message whose text the
    transcript no longer holds, in whole or in part (its author deleted it, or one of
    the messages it was merged from, on the platform)."""
    ctx = context()
    key = f"rewind:{session_id}:{position}"
    if ctx.state.is_done(key):
        return "already done"
    record = ctx.db.get_session(session_id)
    if record is None:
        return "unknown session"
    manager = ctx.manager_for(record, "background")
    if manager is not None and ctx.state.is_done(f"sync:{session_id}:{position}"):
        stored = ctx.db.get_messages(session_id)
        user, assistant = turn_text(turn_messages(transcript_messages(stored), position))
        user = user_text or user
        withdrawn: dict[str, Any] = {
            "turn": position,
            "user_content": user,
            "assistant_content": assistant,
        }
        speaker = speaker_of(stored, position)
        if speaker:
            withdrawn["speaker"] = speaker  # whose memory the turn went to in a group
        manager.on_session_switch(
            session_id,
            parent_session_id=session_id,
            rewound=True,
            reason=reason,
            withdrawn_turn=withdrawn,
        )
    ctx.state.mark_done(key)
    return "withdrawn"


def queue_prefetch(session_id: str, query: str, speaker: str = "") -> str:
    """Warm the session's recall for ``query``. ``speaker``, in jobs queued by earlier
    versions, is not used: recall is the session's own (``MemoryManager.queue_prefetch``)."""
    ctx = context()
    record = ctx.db.get_session(session_id)
    if record is None or record.ended_at is not None:
        return "skipped"
    manager = ctx.manager_for(record, "background")
    if manager is None:
        return "no provider"
    manager.queue_prefetch(query, session_id=session_id)
    return "queued"


def prefetch(session_id: str, query: str) -> str:
    """The job name of earlier versions, still in queues written before an upgrade."""
    return queue_prefetch(session_id, query)


def end_session(session_id: str, reason: str) -> str:
    ctx = context()
    record = ctx.db.get_session(session_id)
    if record is None:
        logger.warning("end_session: unknown session %s", session_id)
        return "unknown session"
    flush_key = f"flush:{session_id}"
    if not ctx.state.is_done(flush_key):
        ctx.loop.run(ctx.config.llm, lambda llm, db: flush_session(ctx, record, llm, db))
        ctx.state.mark_done(flush_key)
    handoff_key = f"handoff:{session_id}"
    if ctx.handoff and not ctx.state.is_done(handoff_key):
        messages = transcript_messages(ctx.db.get_messages(session_id))
        charge = Charge(record.user_key, session_id, "summary")
        summary = ctx.loop.run(
            ctx.config.llm, lambda llm, _: summarize_for_handoff(llm, messages, charge)
        )
        if summary:
            ctx.db.set_summary(session_id, summary)
        ctx.state.mark_done(handoff_key)
    end_key = f"session_end:{session_id}"
    if not ctx.state.is_done(end_key):
        manager = ctx.manager_for(record, "background")
        if manager is not None:
            manager.on_session_end(with_speakers(ctx.db.get_messages(session_id)))
        ctx.state.mark_done(end_key)
    ctx.db.end_session(session_id, reason)
    ctx.release(session_id)
    logger.info("session %s ended (%s)", session_id, reason)
    return "ended"


def with_speakers(stored: list[StoredMessage]) -> list[dict[str, Any]]:
    """The conversation for ``on_session_end`` (``replay``): user messages say who wrote them."""
    kept = [stored[i] for i in replayed(transcript_messages(stored))]
    return [
        {**m.to_openai(), "speaker": m.speaker} if m.role == "user" and m.speaker else m.to_openai()
        for m in kept
    ]


def speaker_of(stored: list[StoredMessage], position: int) -> str | None:
    """Who wrote the user message at ``position`` (None: not recorded)."""
    users = [m for m in stored if m.role == "user"]
    return users[position - 1].speaker if 0 < position <= len(users) else None


def said_before_erasure(ctx: JobContext, stored: list[StoredMessage], position: int) -> bool:
    """Whether the user message at ``position`` has a speaker (a group's session) who was
    erased after writing it: its sync would give the provider their words again."""
    users = [m for m in stored if m.role == "user"]
    if not 0 < position <= len(users) or not users[position - 1].speaker:
        return False
    message = users[position - 1]
    with Tombstones(ctx.db_path) as tombstones:
        return tombstones.erased_since(str(message.speaker), message.timestamp)


def turn_text(turn: list[ChatMessage]) -> tuple[str, str]:
    user = str(turn[0].get("content") or "") if turn else ""
    answers = [str(m["content"]) for m in turn if m.get("role") == "assistant" and m.get("content")]
    return user, answers[-1] if answers else ""

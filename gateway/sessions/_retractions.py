"""Messages their authors deleted or edited on the platform, applied to the transcript.

A deleted message loses its text in the transcript and in the search index; its
turn is left out of the session's history from then on and withdrawn from the
memory providers as ``/undo`` withdraws a turn. An edited message's stored text
becomes the new one. Only the author's own message counts: in a session several
people share, a person retracts their messages only. A session's live agent is
dropped so that it is rebuilt from the transcript; while a turn of the session
runs, the change waits for it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from agent.history import UNDO_MARK
from gateway.events import EDITED, InboundMessage, Retraction
from memory.paths import UserKey

if TYPE_CHECKING:
    from gateway.sessions._manager import SessionManager
    from memory.transcripts import Retracted, SessionRecord, StoredMessage

__all__ = ["Retractions"]

logger = logging.getLogger(__name__)

WITHDRAW_REASON = "deleted"
"""The reason the providers are given for a turn whose message was deleted."""


class Retractions:
    """Applies deletions and edits in the background, one at a time per session."""

    def __init__(self, sessions: SessionManager) -> None:
        self._sessions = sessions
        self._tasks: set[asyncio.Task[str]] = set()
        self._lock = asyncio.Lock()

    async def take(self, retraction: Retraction) -> None:
        """Fast, never raises: the work runs in its own task."""
        task = asyncio.create_task(self.run(retraction))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settle(self) -> None:
        """Wait for the retractions taken so far (shutdown, tests)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def run(self, retraction: Retraction) -> str:
        """Apply one now, after those taken before it; never raises (what became of it)."""
        try:
            async with self._lock:
                return await self.apply(retraction)
        except Exception as exc:
            logger.warning(
                "a %s message %s could not be applied to its transcript (%s)",
                retraction.platform,
                "edit" if retraction.text is not None else "deletion",
                type(exc).__name__,
            )
            return "failed"

    async def apply(self, retraction: Retraction) -> str:
        """Apply one deletion or edit; what became of it (for logs and tests)."""
        r = retraction
        db = self._sessions.db
        found = await db.platform_message(r.platform, r.chat_id, r.message_id)
        record = None if found is None else await db.get_session(found[0].session_id)
        if found is None or record is None:
            logger.debug("%s message %s is in no transcript; nothing to change", *_of(r))
            return "unknown"
        stored, position = found
        if not _written_by(stored, record, r):
            logger.debug("%s message %s is not the retracting person's; ignored", *_of(r))
            return "not theirs"
        live = self._sessions.by_id(record.id)
        if live is not None and live.turn is not None and not live.turn.done():
            await asyncio.wait([live.turn])  # the running turn first, then the change
        if r.text is None:
            return await self._delete(record.id, r, position)
        edited = await db.edit_platform_message(record.id, r.message_id, r.text)
        if edited is None:
            return "unknown"
        await self._sessions.drop_agent(record.id)
        logger.info("a %s message was edited; its stored text follows", r.platform)
        if await self._answer_again(record.id, edited, position, r.user_id):
            return "answered again"
        return "edited"

    async def _answer_again(
        self, session_id: str, edited: Retracted, position: int, user_id: str
    ) -> bool:
        """Answer an edited message again, as /retry does, when the session is still on
        its turn: the last one, nothing after it (no message waiting, no undo)."""
        sessions = self._sessions
        live = sessions.by_id(session_id)
        before, text = edited.before, edited.said
        if live is None or live.ending or live.pending or live.busy or not text:
            return False
        stored = await sessions.db.get_messages(session_id)
        users = sum(1 for m in stored if m.role == "user")
        undone = any(m.content == UNDO_MARK for m in stored if m.id > before.id)
        if users != position or undone:
            return False
        agent = await sessions.agent_for(live)
        if live.busy or live.pending or await agent.undo_last_turn(reason="retry") is None:
            return False
        key = live.key
        first = edited.parts[0].id if edited.parts else before.platform_message_id
        again = InboundMessage(
            platform=key.platform,
            chat_id=key.chat_id,
            user_id=user_id or (key.user_id or ""),
            text=text,
            message_id=first + EDITED if first else "",
            thread_id=key.thread_id,
            is_direct=bool(live.is_direct),
            merged_from=tuple((p.id, p.length) for p in edited.parts),
        )
        return await sessions.submit(again)

    async def _delete(self, session_id: str, r: Retraction, position: int) -> str:
        sessions = self._sessions
        removed = await sessions.db.remove_platform_message(session_id, r.message_id)
        if removed is None:
            return "unknown"
        # the job withdrawing it finds no text in the transcript; of a turn merged from
        # several messages, one part's deletion withdraws the whole turn from the providers
        # (they cannot take out part of one) while the transcript keeps the other parts
        text = removed.before.content or ""
        live = sessions.by_id(session_id)
        agent = None if live is None else live.agent
        if agent is not None and agent.providers is not None:
            await agent.providers.rewound(position, WITHDRAW_REASON, text)
        else:
            sessions.scheduler.rewind(session_id, position, WITHDRAW_REASON, text)
        await sessions.drop_agent(session_id)
        if removed.part:
            logger.info("a %s message merged into a turn was deleted; its text left", r.platform)
            return "part deleted"
        logger.info("a %s message was deleted; its turn is withdrawn", r.platform)
        return "deleted"


def _written_by(stored: StoredMessage, record: SessionRecord, r: Retraction) -> bool:
    if not r.user_id:  # the platform does not say who (Discord's deletions): the message's
        return True
    author = str(UserKey(r.platform, r.user_id))
    if stored.speaker is not None and UserKey.parse(record.user_key).chat:
        return stored.speaker == author
    return record.user_id == r.user_id


def _of(r: Retraction) -> tuple[str, str]:
    return r.platform, r.message_id

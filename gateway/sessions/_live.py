"""The state of one open session held by the gateway."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from itertools import groupby

from agent.agent import Agent
from agent.others import fence
from gateway.events import InboundMessage, SessionKey, platform_message_id
from gateway.sessions._texts import QUOTED_TITLES
from memory.paths import ChatRef, UserKey
from memory.transcripts import PlatformPart, SessionRecord


@dataclass
class LiveSession:
    key: SessionKey
    session_id: str
    user_key: UserKey
    """Whose profile the agent loads (a chat's own key in ``scope: chat`` groups)."""
    chat: ChatRef
    started_at: float
    last_active: float
    agent: Agent | None = None
    pending: list[InboundMessage] = field(default_factory=list)
    worker: asyncio.Task[None] | None = None
    turn: asyncio.Task[str] | None = None
    turn_by: frozenset[UserKey] = frozenset()
    """Who wrote the messages the running turn answers."""
    turns_without_agent: int = 0
    """Turns counted while no agent is in memory (after eviction); the agent counts them else."""
    is_direct: bool | None = None
    fresh: bool = False
    """Made here just now (a new id): nothing of it is stored until its agent opens it."""
    handoff: str | None = None
    ending: bool = False
    expire_after_turn: bool = False
    epoch: int | None = None
    """Several replicas: the transcript epoch this replica took with the session (0: it
    took none, the session began here); its writes with an older one are refused."""

    taking: bool = False
    """The session's worker took a batch: its turn is being prepared (the agent made,
    the budget checked) or runs; busy from then on, not only once ``turn`` exists."""

    @property
    def busy(self) -> bool:
        return self.taking or (self.turn is not None and not self.turn.done())

    @property
    def turns(self) -> int:
        """Turns of this session so far (the agent's own count while it is in memory)."""
        return self.agent.turns if self.agent is not None else self.turns_without_agent

    def cancel_turn(self) -> bool:
        """Interrupt the running turn; True if there was one."""
        if self.turn is not None and not self.turn.done():
            self.turn.cancel()
            return True
        return False


def live_from_record(key: SessionKey, record: SessionRecord) -> LiveSession:
    """An open session of the database, as this process holds it."""
    return LiveSession(
        key,
        record.id,
        UserKey.parse(record.user_key),
        ChatRef(record.platform, record.chat_id or "", record.thread_id),
        record.started_at,
        record.last_active_at or record.started_at,
        is_direct=record.is_direct,
    )


def merge_texts(batch: list[InboundMessage]) -> str:
    """Messages that queued up while the agent was busy become one turn, in order."""
    texts = [text for m in batch if (text := model_text(m))]
    return "\n\n".join(texts)


def platform_ids(batch: list[InboundMessage]) -> str | tuple[PlatformPart, ...]:
    """What the turn's stored message is known as on the platform: the id of its one
    message, or the id of each message merged into it with the length of its text there
    (the layout ``merge_texts`` makes)."""
    if len(batch) == 1 and not batch[0].merged_from:
        return platform_message_id(batch[0].message_id)
    return tuple(part for m in batch for part in _parts_of(m))


def _parts_of(message: InboundMessage) -> list[PlatformPart]:
    if message.merged_from:  # a merged turn answered again after an edit
        return [PlatformPart(i, n) for i, n in message.merged_from]
    return [PlatformPart(platform_message_id(message.message_id), len(model_text(message)))]


def model_text(message: InboundMessage) -> str:
    """What the model is shown of ``message``: others' words it carries fenced as quoted
    material (``agent.others``), then the sender's own text."""
    blocks = [
        fence(QUOTED_TITLES[source], ((q.author, q.text) for q in quoted))
        for source, quoted in groupby(message.quoted, key=lambda q: q.source)
    ]
    replied = message.in_reply_to
    if replied is not None:
        lines = "\n> ".join(replied.text.splitlines() or [""])
        blocks.append(f"In reply to this earlier message:\n> {replied.author}: {lines}")
    return "\n\n".join(b for b in [*blocks, message.text.strip()] if b)


def others_in(batch: list[InboundMessage]) -> bool:
    """Whether the batch carries words its senders did not write."""
    return any(m.others_content for m in batch)


def speaker_of(batch: list[InboundMessage]) -> UserKey | None:
    """Who wrote the batch; None when several people did."""
    speakers = {m.user_key for m in batch}
    return speakers.pop() if len(speakers) == 1 else None


def next_turn(pending: list[InboundMessage]) -> tuple[list[InboundMessage], list[InboundMessage]]:
    """The messages the next turn answers, and those left for the turns after it.

    Messages queued together are one turn, but a message whose answer was half shown
    before a restart or a hand-over (``resume``) is finished on its own, in the
    messages it had shown: it is never merged with those that were queued behind it.
    """
    if pending[0].resume:
        return pending[:1], pending[1:]
    for index, msg in enumerate(pending):
        if msg.resume:
            return pending[:index], pending[index:]
    return pending, []

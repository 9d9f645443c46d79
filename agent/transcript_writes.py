"""How an agent writes its session to SessionDB: every message appended as it
happens (after the fence, with the session's epoch), the usage of every LLM call,
the undo mark of a turn taken back, and the answers a cancelled turn leaves to
its dangling tool calls.

``TranscriptWrites`` is a part of ``agent.Agent`` (its base class).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

from agent.context import SessionContext
from agent.history import UNDO_MARK, RawTexts, drop_last_turn, unanswered_tool_calls
from agent.llm import LLMResponse, Usage
from agent.messages import ChatMessage
from agent.provider_calls import ProviderCalls
from memory.paths import UserKey
from memory.transcripts import AsyncSessionDB, PlatformIds

__all__ = ["INTERRUPTED_RESULT", "TranscriptWrites"]

INTERRUPTED_RESULT = json.dumps({"success": False, "error": "interrupted by the user"})


class TranscriptWrites:
    """The transcript side of one session's agent."""

    session: SessionContext
    db: AsyncSessionDB
    providers: ProviderCalls | None
    now: Callable[[], float]
    history: list[ChatMessage]
    usage: Usage
    fence: Callable[[], Awaitable[None]] | None
    epoch: int | None
    turns: int
    _written: RawTexts
    _kept: list[int]
    _speakers: dict[int, str | None]
    _reported: int
    _writing: asyncio.Future[None] | None = None
    """The write of the turn's user message, under way while its request is made."""

    def turn_speakers(self) -> list[str | None]:
        """Who wrote each turn not undone, oldest first (None: not recorded, or several)."""
        return [self._speakers.get(position) for position in self._kept]

    async def undo_last_turn(self, reason: str = "undo") -> str | None:
        """Forget the last turn (the user's message and everything after it) from the context.

        The transcript keeps the turn and records the undo, so an agent rebuilt
        from SessionDB forgets it too; the providers are told (``reason`` is
        ``"undo"`` or ``"retry"``) and the turn is withdrawn from the background
        provider, in order with its syncs. Returns the user's text, or None.
        """
        message = drop_last_turn(self.history)
        if message is None:
            return None
        raw = self._written.take(message, self.history)
        self.turns = max(0, self.turns - 1)
        sid = self.session.session_id
        await self.db.append_message(sid, "system", UNDO_MARK, timestamp=self.now())
        withdrawn = self._kept.pop() if self._kept else None
        if self.providers is not None:
            await self.providers.rewound(withdrawn, reason)
        return raw

    async def _append(
        self,
        message: ChatMessage,
        *,
        stored_content: str | None = None,
        tool_name: str | None = None,
        finish_reason: str | None = None,
        speaker: UserKey | None = None,
        platform_id: PlatformIds = None,
    ) -> None:
        if self.fence is not None:  # raises once this process no longer holds the session
            await self.fence()
        await self._written_ahead()
        self.history.append(message)
        await self._write(message, stored_content, tool_name, finish_reason, speaker, platform_id)

    async def _append_ahead(
        self,
        message: ChatMessage,
        *,
        stored_content: str | None = None,
        speaker: UserKey | None = None,
        platform_id: PlatformIds = None,
    ) -> None:
        """``_append`` whose database write goes on while the turn's request is made: the
        history has the message at once, and ``_written_ahead()`` waits for the write
        before anything else of the session is written (the transcript keeps its order)
        and before the turn ends, also when it failed or was cancelled (the message stays
        in the transcript). A write still under way (a fresh session's opening) is not
        waited for: the database takes calls in the order they were made."""
        if self.fence is not None:
            await self.fence()
        self.history.append(message)
        before = self._writing
        write = asyncio.ensure_future(
            self._write(message, stored_content, None, None, speaker, platform_id)
        )
        self._writing = write if before is None else asyncio.ensure_future(_both(before, write))

    async def _written_ahead(self) -> None:
        """Wait for the user message's write under way, if any; its error is raised."""
        writing, self._writing = self._writing, None
        if writing is not None:
            await asyncio.shield(writing)

    async def _write(
        self,
        message: ChatMessage,
        stored_content: str | None,
        tool_name: str | None,
        finish_reason: str | None,
        speaker: UserKey | None,
        platform_id: PlatformIds,
    ) -> None:
        content = message.get("content") if stored_content is None else stored_content
        await self.db.append_message(
            self.session.session_id,
            message["role"],
            content if isinstance(content, str) else None,
            tool_call_id=message["tool_call_id"] if message["role"] == "tool" else None,
            tool_calls=message.get("tool_calls") if message["role"] == "assistant" else None,
            tool_name=tool_name,
            finish_reason=finish_reason,
            timestamp=self.now(),
            speaker=None if speaker is None else str(speaker),
            epoch=self.epoch,
            platform_message_id=platform_id,
        )

    @staticmethod
    async def _stored(*writes: Awaitable[None]) -> None:
        """Writes queued together (the database commits them as one batch), in order;
        the first one's error raised once all have ended."""
        for outcome in await asyncio.gather(*writes, return_exceptions=True):
            if isinstance(outcome, BaseException):
                raise outcome

    async def _record_usage(self, response: LLMResponse) -> None:
        usage = response.usage
        self._reported = usage.prompt_tokens
        self.usage = self.usage + usage
        await self.db.add_usage(
            self.session.session_id,
            input_tokens=usage.prompt_tokens,
            output_tokens=usage.completion_tokens,
            cache_read_tokens=usage.cached_tokens,
            reasoning_tokens=usage.reasoning_tokens,
        )

    async def _answer_dangling_tool_calls(self) -> None:
        """After a cancel: answer every tool call that has no result yet."""
        for call_id, name in unanswered_tool_calls(self.history):
            await self._append(
                {"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED_RESULT},
                tool_name=name,
            )


async def _both(first: asyncio.Future[None], then: asyncio.Future[None]) -> None:
    """Two writes under way, in order: both ended, the first one's error raised."""
    for outcome in await asyncio.gather(first, then, return_exceptions=True):
        if isinstance(outcome, BaseException):
            raise outcome

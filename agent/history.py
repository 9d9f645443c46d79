"""Pure edits and reads of an agent's message history, and the raw texts kept beside it."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

from agent.messages import ChatMessage, ContentPart, UserMessage

__all__ = [
    "UNDO_MARK",
    "RawTexts",
    "TurnNote",
    "drop_last_turn",
    "kept_turns",
    "replay",
    "replayed",
    "turn_messages",
    "unanswered_tool_calls",
]

UNDO_MARK = "[undo: the last turn was withdrawn by the user]"
"""Recorded in the transcript by /undo; history rebuilt from it drops that turn."""


@dataclass(frozen=True)
class TurnNote:
    """What one turn's requests add to its user message: recalled context, a memory nudge.

    It belongs to the request it was made for. The history keeps the message as
    the person wrote it, so a later turn never replays an earlier turn's recall
    (in a session several people share, one member's recall would reach every
    other member's requests) and the prefix of a request before its own user
    message stays the same from turn to turn, as prompt caching needs.
    """

    message: UserMessage
    """The turn's user message, the object in the history."""
    text: str
    """Added to the message's text; ``""`` for nothing."""

    def applied(self, history: Sequence[ChatMessage]) -> list[ChatMessage]:
        """``history`` with the turn's message replaced by a copy that carries the note."""
        if not self.text:
            return list(history)
        return [self._noted() if m is self.message else m for m in history]

    def _noted(self) -> UserMessage:
        content = self.message["content"]
        if isinstance(content, str):
            return {"role": "user", "content": content + self.text}
        parts: list[ContentPart] = [copy.copy(p) for p in content]
        for part in parts:
            if part["type"] == "text":
                part["text"] += self.text
                break
        else:
            parts.insert(0, {"type": "text", "text": self.text.lstrip()})
        return {"role": "user", "content": parts}


class RawTexts:
    """The text the person wrote, kept beside the user messages of a live history.

    A user message's ``content`` is the text as written, or image parts with it
    (what a turn's requests add, :class:`TurnNote`, is never in it). /undo gives
    back the text as written, and a message asked again after a restart is
    recognised by it. A text belongs to the message object it was kept for (two turns may
    say the same thing): it stays with that message through edits of the list
    that keep the object (an undo, a flush), and ``carry`` moves it to the copy
    a compression makes.
    """

    def __init__(self) -> None:
        self._texts: dict[int, tuple[UserMessage, str]] = {}
        """By ``id()`` of the message, which the entry keeps alive (so the id is not reused)."""

    def keep(self, message: UserMessage, raw: str) -> None:
        self._texts[id(message)] = (message, raw)

    def text(self, message: ChatMessage) -> str | None:
        """The raw text kept for ``message``, else its content when that is text."""
        kept = self._texts.get(id(message))
        if kept is not None:
            return kept[1]
        content = message.get("content")
        return content if isinstance(content, str) else None

    def take(self, message: ChatMessage, history: Sequence[ChatMessage]) -> str | None:
        """``text(message)`` of a message just dropped; forgets every text not of ``history``."""
        text = self.text(message)
        present = {id(kept) for kept in history}
        self._texts = {key: kept for key, kept in self._texts.items() if key in present}
        return text

    def carry(
        self,
        old: Sequence[ChatMessage],
        new: Sequence[ChatMessage],
        origins: Sequence[int | None],
    ) -> None:
        """Move the texts of ``old``'s messages to their copies in ``new``.

        ``origins`` gives, per message of ``new``, the index in ``old`` of the
        message it copies (None: a new one), as ``ContextCompressor`` reports it.
        Texts of messages not copied are forgotten.
        """
        texts: dict[int, tuple[UserMessage, str]] = {}
        for message, origin in zip(new, origins, strict=True):
            kept = None if origin is None else self._texts.get(id(old[origin]))
            if kept is not None and message["role"] == "user":
                texts[id(message)] = (message, kept[1])
        self._texts = texts


def drop_last_turn(history: list[ChatMessage]) -> ChatMessage | None:
    """Remove the last user message and everything after it; returns that message."""
    for index in range(len(history) - 1, -1, -1):
        if history[index]["role"] == "user":
            message = history[index]
            del history[index:]
            return message
    return None


def unanswered_tool_calls(history: Sequence[ChatMessage]) -> list[tuple[str, str]]:
    """``(call id, tool name)`` of every tool call in ``history`` with no result yet, in order."""
    answered = {m.get("tool_call_id") for m in history if m["role"] == "tool"}
    missing: list[tuple[str, str]] = []
    for message in history:
        if message["role"] != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            if call["id"] not in answered:
                answered.add(call["id"])
                missing.append((call["id"], call["function"]["name"]))
    return missing


def is_retracted(message: ChatMessage) -> bool:
    """A user message whose text its author deleted on their platform (kept without text,
    so that later turns keep their positions); its turn is withdrawn like an undone one."""
    return message["role"] == "user" and message.get("content") is None


def is_undo_mark(message: ChatMessage) -> bool:
    return message.get("role") == "system" and message.get("content") == UNDO_MARK


def kept_turns(transcript: Sequence[ChatMessage]) -> list[int]:
    """Positions (1-based, over every user message ever stored) of the turns not undone.

    A turn's position never changes: /undo records a mark instead of deleting,
    so turn 3 stays turn 3 after turn 2 is withdrawn, and the turn after an
    undo gets the next position, never an old one.
    """
    kept: list[int] = []
    position = 0
    for message in transcript:
        if message["role"] == "user":
            position += 1
            if not is_retracted(message):
                kept.append(position)
        elif is_undo_mark(message) and kept:
            kept.pop()
    return kept


def turn_messages(transcript: Sequence[ChatMessage], position: int) -> list[ChatMessage]:
    """The messages of the turn at ``position`` (see :func:`kept_turns`), user message first."""
    seen = 0
    start = None
    for index, message in enumerate(transcript):
        if message["role"] != "user":
            continue
        seen += 1
        if seen == position:
            start = index
        elif start is not None:
            return [m for m in transcript[start:index] if not is_undo_mark(m)]
    if start is None:
        return []
    return [m for m in transcript[start:] if not is_undo_mark(m)]


def replayed(transcript: Sequence[ChatMessage]) -> list[int]:
    """Indexes into ``transcript`` of the messages :func:`replay` keeps, in order."""
    kept: list[int] = []
    retracted = False
    for index, message in enumerate(transcript):
        if message["role"] == "user":
            retracted = is_retracted(message)
        if retracted and not is_undo_mark(message):  # its author deleted it: turn left out
            continue
        if is_undo_mark(message):
            for back in range(len(kept) - 1, -1, -1):  # drop the last turn
                if transcript[kept[back]]["role"] == "user":
                    del kept[back:]
                    break
        elif message["role"] != "system":
            kept.append(index)
    return kept


def replay(transcript: Sequence[ChatMessage]) -> list[ChatMessage]:
    """The conversation a transcript holds: undone turns dropped, system records left out."""
    return [transcript[index] for index in replayed(transcript)]

"""User messages found again by the platform's id, to follow a deletion or an edit.

A stored user message answered on its own keeps the platform's id of its message
(``messages.platform_message_id``). One made of several quick messages answered as
one turn keeps every part's id in ``platform_messages``, in order, with the length
of the part's text: the stored text is the parts' texts joined by a blank line (the
empty ones left out), then whatever the turn added after them (a note of its
images). A part deleted on the platform leaves the stored text (the whole turn goes
when no part with text is left); a part edited changes there. A stored text that no
longer has that layout is treated as one message: a deletion takes all of it, an
edit replaces all of it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from memory.transcripts._records import StoredMessage

__all__ = ["PlatformIds", "PlatformPart", "Retracted", "find", "insert_parts", "set_text"]

logger = logging.getLogger(__name__)

JOIN = "\n\n"
"""Between the texts of two parts of one stored message."""


class PlatformPart(NamedTuple):
    """One platform message of a stored user message merged from several."""

    id: str
    length: int
    """Characters of its text in the stored message (0: it brought no text)."""


PlatformIds = str | Sequence[PlatformPart] | None
"""What a stored user message is known as on its platform: one message's id, the parts
it was merged from, or nothing."""


@dataclass(frozen=True, slots=True)
class Retracted:
    """A user message after a deletion or edit of (a part of) it."""

    before: StoredMessage
    """The message as it was."""
    text: str | None
    """Its stored text now; None when nothing of it is left (the whole turn went)."""
    part: bool
    """Whether only one part of a message merged from several was changed."""
    parts: tuple[PlatformPart, ...] = ()
    """A message merged from several: its parts now."""

    @property
    def said(self) -> str | None:
        """The stored text now without what the turn added after the parts' texts."""
        if self.text is None or not self.parts:
            return self.text
        lengths = [p.length for p in self.parts if p.length > 0]
        return self.text[: sum(lengths) + len(JOIN) * max(0, len(lengths) - 1)]


def insert_parts(conn: Any, message_id: int, parts: Sequence[PlatformPart]) -> None:
    """Record the parts of the stored user message ``message_id`` (in its transaction)."""
    for index, part in enumerate(parts):
        conn.execute(
            "INSERT INTO platform_messages (message_id, part, platform_message_id, length)"
            " VALUES (?, ?, ?, ?)",
            (message_id, index, part.id, part.length),
        )


_IN_CHAT = (
    "SELECT m.* FROM messages AS m JOIN sessions AS s ON s.id = m.session_id"
    " WHERE m.role = 'user' AND m.content IS NOT NULL AND s.platform = ? AND s.chat_id = ?"
    " AND {which} ORDER BY m.id DESC LIMIT 1"
)
_BY_ID = "m.platform_message_id = ?"
_BY_PART = "m.id IN (SELECT message_id FROM platform_messages WHERE platform_message_id = ?)"


def find(conn: Any, platform: str, chat_id: str, platform_id: str) -> StoredMessage | None:
    """The newest user message of a session of the chat, still holding text, that is or
    holds the platform's message ``platform_id``."""
    found: StoredMessage | None = None
    for which in (_BY_ID, _BY_PART):
        row = conn.execute(
            _IN_CHAT.format(which=which), (platform, chat_id, platform_id)
        ).fetchone()
        if row is not None and (found is None or row["id"] > found.id):
            found = StoredMessage.from_row(row)
    return found


def set_text(conn: Any, session_id: str, platform_id: str, content: str | None) -> Retracted | None:
    """Delete (``content`` None) or edit the message or part the platform knows as
    ``platform_id`` in the session's transcript (in the caller's write transaction):
    every stored user message that holds it (a turn answered again after an edit holds
    it as the undone one does). The newest of them as changed; None when none is."""
    found: list[Retracted] = []
    for row in conn.execute(
        "SELECT * FROM messages WHERE session_id = ? AND platform_message_id = ?"
        " AND role = 'user' AND content IS NOT NULL ORDER BY id",
        (session_id, platform_id),
    ).fetchall():
        conn.execute("UPDATE messages SET content = ? WHERE id = ?", (content, row["id"]))
        found.append(Retracted(StoredMessage.from_row(row), content, part=False))
    for row in conn.execute(
        "SELECT m.*, p.part AS merged_part FROM platform_messages AS p"
        " JOIN messages AS m ON m.id = p.message_id WHERE m.session_id = ?"
        " AND p.platform_message_id = ? AND m.role = 'user' AND m.content IS NOT NULL"
        " ORDER BY m.id",
        (session_id, platform_id),
    ).fetchall():
        found.append(_set_part(conn, row, content))
    return max(found, key=lambda r: r.before.id, default=None)


def _set_part(conn: Any, row: Any, content: str | None) -> Retracted:
    """Delete or edit part ``row["merged_part"]`` of the merged message ``row``."""
    before = StoredMessage.from_row(row)
    number = int(row["merged_part"])
    rows = conn.execute(
        "SELECT part, platform_message_id, length FROM platform_messages"
        " WHERE message_id = ? ORDER BY part",
        (before.id,),
    ).fetchall()
    numbers = [int(p["part"]) for p in rows]
    parts = [PlatformPart(str(p["platform_message_id"]), int(p["length"])) for p in rows]
    index = numbers.index(number)
    text = _changed(before.content or "", parts, index, content)
    conn.execute("UPDATE messages SET content = ? WHERE id = ?", (text, before.id))
    if content is None:
        conn.execute(
            "DELETE FROM platform_messages WHERE message_id = ? AND part = ?", (before.id, number)
        )
        del parts[index]
    else:
        conn.execute(
            "UPDATE platform_messages SET length = ? WHERE message_id = ? AND part = ?",
            (len(content), before.id, number),
        )
        parts[index] = parts[index]._replace(length=len(content))
    return Retracted(before, text, part=text is not None, parts=tuple(parts))


def _changed(stored: str, parts: list[PlatformPart], index: int, content: str | None) -> str | None:
    """The stored text with part ``index`` taken out (``content`` None) or replaced."""
    split = _split(stored, [p.length for p in parts])
    if split is None:
        logger.debug("a merged message's text no longer has its parts' layout; taken whole")
        return content
    texts, tail = split
    texts[index] = content or ""
    if content is None and not any(texts):
        return None  # no part with text is left: the whole turn goes
    return JOIN.join(t for t in texts if t) + tail


def _split(stored: str, lengths: list[int]) -> tuple[list[str], str] | None:
    """The parts' texts and what follows them, or None when ``stored`` does not fit."""
    texts: list[str] = []
    at, first = 0, True
    for length in lengths:
        if length <= 0:
            texts.append("")
            continue
        if not first:
            if stored[at : at + len(JOIN)] != JOIN:
                return None
            at += len(JOIN)
        first = False
        texts.append(stored[at : at + length])
        at += length
    if at > len(stored):
        return None
    return texts, stored[at:]

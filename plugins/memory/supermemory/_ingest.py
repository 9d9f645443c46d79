"""Turning buffered turns into Supermemory conversations, and a profile into recall text.

A session becomes one conversation per speaker (a group chat's session has
several): its turns as ``user`` / ``assistant`` messages, oldest first, the
oldest dropped beyond :data:`MAX_SESSION_CHARS`. Its ``conversationId`` is
derived from the speaker's tag and the session id, so ingesting the same
session again updates that conversation instead of adding another.
"""

from __future__ import annotations

import hashlib
import logging
from collections import defaultdict

from ._buffer import Turn, UserBuffer
from ._client import BackendFailed, Client, Paused, Profile, Rejected
from ._tags import container_tag

logger = logging.getLogger(__name__)

MAX_LINE = 500
MAX_FACTS = 10
MAX_SESSION_CHARS = 50_000
"""How much of a session's text goes into its conversation (the latest part kept)."""


def _line(text: str) -> str:
    text = " ".join(text.split())
    return f"- {text if len(text) <= MAX_LINE else text[: MAX_LINE - 1] + '…'}"


def format_recall(profile: Profile) -> str:
    """The profile's facts and the matching memories as short lines; ``""`` for none.

    A text already listed under an earlier heading is not repeated.
    """
    seen: set[str] = set()
    sections = []
    parts: list[tuple[str, list[str]]] = [
        ("Lasting facts about this person:", profile.static),
        ("Recent context:", profile.dynamic),
        ("Related memories:", [hit.text for hit in profile.hits]),
    ]
    for heading, texts in parts:
        lines: list[str] = []
        for text in texts:
            key = " ".join(text.split()).casefold()
            if key and key not in seen and len(lines) < MAX_FACTS:
                seen.add(key)
                lines.append(_line(text))
        if lines:
            sections.append("\n".join([heading, *lines]))
    return "\n\n".join(sections)


def messages_of(turns: list[Turn]) -> list[dict[str, str]]:
    """The turns as chat messages, oldest first, the oldest dropped beyond the cap."""
    messages = []
    for turn in turns:
        if turn.user:
            messages.append({"role": "user", "content": turn.user})
        if turn.assistant:
            messages.append({"role": "assistant", "content": turn.assistant})
    kept: list[dict[str, str]] = []
    size = 0
    for message in reversed(messages):
        size += len(message["content"])
        if kept and size > MAX_SESSION_CHARS:
            break
        kept.append(message)
    kept.reverse()
    if kept and len(kept[0]["content"]) > MAX_SESSION_CHARS:
        kept[0] = {**kept[0], "content": kept[0]["content"][-MAX_SESSION_CHARS:]}
    return kept


def session_custom_id(tag: str, session: str) -> str:
    return "chorus_s_" + hashlib.sha256(f"{tag}\0{session}".encode()).hexdigest()[:40]


def ingest_pending(client: Client, buffer: UserBuffer) -> int:
    """Ingest every ended session of ``buffer``; the number of files done.

    Stops at the first backend failure (the rest waits for the next session
    end); a session Supermemory refuses (4xx) is set aside as ``.rejected``
    rather than tried for ever.
    """
    done = 0
    for path, turns in buffer.pending():
        by_speaker: dict[str, list[Turn]] = defaultdict(list)
        for turn in turns:
            by_speaker[turn.speaker].append(turn)
        try:
            for who, said in by_speaker.items():
                tag = container_tag(who)
                messages = messages_of(said)
                if not messages:
                    continue
                client.ingest(
                    tag,
                    session_custom_id(tag, said[0].session),
                    messages,
                    metadata={"source": "chorus", "chorus_session": said[0].session},
                )
        except Rejected as exc:
            logger.warning("supermemory refused a session (HTTP %d); set aside", exc.status)
            path.rename(path.with_suffix(".rejected"))
            continue
        except (BackendFailed, Paused) as exc:
            logger.warning("supermemory session ingest postponed: %s", type(exc).__name__)
            break
        path.unlink(missing_ok=True)
        done += 1
        logger.debug("supermemory ingested a session for %d speaker(s)", len(by_speaker))
    return done

"""Turning buffered turns into Supermemory memories, and hits into recall lines.

A session becomes one memory per speaker (a group chat's session has several):
its turns as ``User: …`` / ``Assistant: …`` paragraphs, oldest first, cut from
the front to :data:`MAX_SESSION_CHARS`. Its ``customId`` is derived from the
speaker's tag and the session id, so ingesting the same session again updates
that memory instead of adding another.
"""

from __future__ import annotations

import hashlib
import logging
from collections import defaultdict

from ._buffer import Turn, UserBuffer
from ._client import BackendFailed, Client, Hit, Paused, Rejected
from ._tags import container_tag

logger = logging.getLogger(__name__)

MAX_LINE = 500
MAX_SESSION_CHARS = 50_000
"""How much of a session's transcript goes into its memory (the latest part kept)."""


def format_recall(hits: list[Hit]) -> str:
    """Recalled memories as short lines; ``""`` for none."""
    lines = []
    for hit in hits:
        text = hit.text if len(hit.text) <= MAX_LINE else hit.text[: MAX_LINE - 1] + "…"
        lines.append(f"- {text}")
    return "\n".join(lines)


def transcript(turns: list[Turn]) -> str:
    """The turns as one text, oldest first, cut from the front to the cap."""
    parts = []
    for turn in turns:
        lines = []
        if turn.user:
            lines.append(f"User: {turn.user}")
        if turn.assistant:
            lines.append(f"Assistant: {turn.assistant}")
        parts.append("\n".join(lines))
    return "\n\n".join(p for p in parts if p)[-MAX_SESSION_CHARS:]


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
                client.add(
                    tag,
                    transcript(said),
                    custom_id=session_custom_id(tag, said[0].session),
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

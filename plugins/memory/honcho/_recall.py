"""The recall injected before a turn: its text, and the copy a background job keeps warm.

:func:`format_recall` turns a peer card and a representation into the short
text the manager fences into the user's message. :class:`WarmRecall` is the
last recall ``queue_prefetch`` fetched for one person, kept in their provider
directory (``CHORUS_HOME/providers/honcho/users/<platform>/<id>/recall.json``,
written to a temporary file and renamed) so the ``"primary"`` instance, in
another process, can answer with it while Honcho is down or paused.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from pathlib import Path

MAX_RECALL = 4000
"""Characters of recall injected at most."""
MAX_CARD_LINE = 300
WARM_FILE = "recall.json"
WARM_MAX_AGE = 900.0
"""Seconds a warm recall may be old and still stand in for a live one."""


def _line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def format_recall(representation: str, card: list[str]) -> str:
    """The peer card, then the representation; ``""`` when Honcho knows nothing yet."""
    parts = []
    facts = [_line(fact, MAX_CARD_LINE) for fact in card if fact.strip()]
    if facts:
        parts.append("Peer card (Honcho):\n" + "\n".join(f"- {fact}" for fact in facts))
    if representation.strip():
        parts.append("What Honcho has concluded about them:\n" + representation.strip())
    text = "\n\n".join(parts)
    return text if len(text) <= MAX_RECALL else text[: MAX_RECALL - 1] + "…"


def format_recall_with(recalled: str, supplement: str) -> str:
    """The recall, then Honcho's dialectic answer about the message, within :data:`MAX_RECALL`."""
    answer = supplement.strip()
    if not answer:
        return recalled
    text = "\n\n".join(p for p in (recalled, "Honcho on this message:\n" + answer) if p)
    return text if len(text) <= MAX_RECALL else text[: MAX_RECALL - 1] + "…"


class WarmRecall:
    def __init__(self, directory: Path) -> None:
        self.path = directory / WARM_FILE

    def store(self, text: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".recall-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"text": text, "at": time.time()}, handle, ensure_ascii=False)
            os.replace(temp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise

    def load(self, max_age: float = WARM_MAX_AGE) -> str:
        """The warm recall if it is at most ``max_age`` seconds old, else ``""``."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            text, at = str(data["text"]), float(data["at"])
        except (OSError, ValueError, KeyError, TypeError):
            return ""
        return text if time.time() - at <= max_age else ""

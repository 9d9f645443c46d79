"""Explicit preferences and decisions in what the user wrote, found by sentence patterns.

A sentence of a user message is kept when it states, in the first person:

* a preference (category ``"preference"``): ``I prefer…``, ``I (really) like/love/
  enjoy/hate/dislike…``, ``I can't stand…``, ``I don't like…``, ``my X is Y``
  (``my favourite editor is Helix``), or a standing rule that starts with
  ``always`` / ``never`` (``Always answer in French.``);
* a decision (category ``"decision"``): ``we decided…``, ``I've decided…``,
  ``let's use / go with / stick with / switch to…``, ``we'll use…``.

Questions (a sentence ending in ``?``), sentences shorter than 8 or longer than
300 characters, sentences naming nothing but their trigger (``I love it!``), and
anything inside ``<memory-context>`` blocks (recalled memory, never the user's
own words) are skipped. The sentence is stored as written, whitespace collapsed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from memory.providers import strip_memory_context
from memory.store import scan_memory_content

from ._text import clean_content, stem, terms

MAX_PER_TEXT = 20
MIN_LENGTH = 8
MAX_LENGTH = 300

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")

_PREFERENCE = re.compile(
    r"\bi\s+(?:really\s+|do\s+|truly\s+|absolutely\s+|much\s+|kind\s+of\s+)?"
    r"(?:prefer|like|love|enjoy|adore|hate|dislike|detest|can['’]?t\s+stand|cannot\s+stand"
    r"|don['’]?t\s+like|do\s+not\s+like)\b"
    r"|\bmy\s+(?:[\w'’-]+\s+){1,3}(?:is|are)\s+\S"
    r"|^(?:please\s+)?(?:always|never)\s+\w",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(?:we|i)\s*(?:have\s+|['’]ve\s+|just\s+|finally\s+)?decided\b"
    r"|\blet['’]?s\s+(?:use|go\s+with|stick\s+with|switch\s+to|keep|pick|choose|adopt)\b"
    r"|\bwe\s*(?:['’]ll|\s+will)\s+(?:use|go\s+with|stick\s+with)\b",
    re.IGNORECASE,
)


_TRIGGER_WORDS = (
    "prefer like love enjoy adore hate dislike detest stand always never decided use go stick "
    "switch keep pick choose adopt"
)
_TRIGGERS = frozenset(stem(w) for w in _TRIGGER_WORDS.split())


def _says_something(sentence: str) -> bool:
    """Whether a sentence names anything besides its trigger words (``I love it`` does not)."""
    return any(t not in _TRIGGERS for t in terms(sentence))


def _sentences(text: str) -> Iterable[str]:
    for piece in _SENTENCE_SPLIT.split(text):
        sentence = clean_content(_BULLET.sub("", piece))
        if MIN_LENGTH <= len(sentence) <= MAX_LENGTH and not sentence.endswith("?"):
            yield sentence


def classify(sentence: str) -> str | None:
    """``"decision"``, ``"preference"``, or None when the sentence states neither."""
    if _DECISION.search(sentence):
        return "decision"
    if _PREFERENCE.search(sentence):
        return "preference"
    return None


def extract(text: str) -> list[tuple[str, str]]:
    """``(sentence, category)`` for each explicit preference or decision in ``text``."""
    found: list[tuple[str, str]] = []
    for sentence in _sentences(strip_memory_context(text)):
        category = classify(sentence)
        if (
            category is not None
            and _says_something(sentence)
            and scan_memory_content(sentence) is None
        ):
            found.append((sentence, category))
            if len(found) >= MAX_PER_TEXT:
                break
    return found


def message_text(message: dict[str, Any]) -> str:
    """The text of one OpenAI-format message (a string, or the text parts of a list)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(p.get("text", ""))
            for p in content
            if isinstance(p, dict) and p.get("type") == "text"
        ]
        return "\n".join(parts)
    return ""


def user_texts(messages: Iterable[dict[str, Any]]) -> list[str]:
    """The texts of the user messages in ``messages``, in order."""
    return [message_text(m) for m in messages if isinstance(m, dict) and m.get("role") == "user"]

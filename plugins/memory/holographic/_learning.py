"""What the holographic provider learns from a conversation, in the store of whoever
said it: the preferences and decisions a user states (:mod:`._extract`), in
``sync_turn`` and ``on_session_end`` but never in the ``"flush"`` context; the
built-in memory tool's writes mirrored as facts; and, after ``/undo``, the facts
only the withdrawn turn taught taken back.

``Learning`` is a part of :class:`._provider.HolographicProvider` (its base class).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from memory.providers import strip_memory_context
from memory.store import scan_memory_content

from . import _extract
from ._fact import Fact
from ._store import FactStore

__all__ = ["AUTO_CATEGORIES", "Learning"]

logger = logging.getLogger("plugins.memory.holographic._provider")  # the provider's own lines

AUTO_CATEGORIES = ("preference", "decision")


class Learning:
    """The write side of the holographic provider."""

    _context: str
    """``agent_context`` of the session (``"flush"``: nothing is learnt)."""

    if TYPE_CHECKING:  # the provider's own, used here

        def _store(self, speaker: Any = None) -> FactStore: ...

        def _fill(self, store: FactStore) -> None: ...

    def _learn(self, store: FactStore, text: str) -> int:
        """Store the preferences and decisions stated in ``text``; how many were new."""
        created = 0
        for sentence, category in _extract.extract(text):
            _, new = store.add(sentence, category)
            created += new
        self._fill(store)  # the new facts, and any a failed call left without an embedding
        return created

    def sync_turn(
        self,
        user_content: str,
        assistant_content: str,
        *,
        session_id: str = "",
        messages: list[dict[str, Any]] | None = None,
        speaker: str | None = None,
    ) -> None:
        if self._context == "flush" or not user_content.strip():
            return
        created = self._learn(self._store(speaker), user_content)
        logger.debug("holographic sync_turn of session %s: %d new facts", session_id, created)

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        if self._context == "flush":
            return
        created = 0
        for message in messages:
            if not isinstance(message, dict) or message.get("role") != "user":
                continue
            speaker = message.get("speaker")
            text = _extract.message_text(message)
            created += self._learn(self._store(speaker if isinstance(speaker, str) else None), text)
        logger.debug("holographic on_session_end: %d new facts", created)

    def on_session_switch(
        self,
        new_session_id: str,
        *,
        parent_session_id: str = "",
        reset: bool = False,
        rewound: bool = False,
        **kwargs: Any,
    ) -> None:
        """After ``/undo``: forget what a withdrawn turn taught, if nothing else taught it.

        A fact goes only if it came from that turn's statements and was never
        stated again (its creation and last update are the same moment).
        """
        withdrawn = kwargs.get("withdrawn_turn")
        if not rewound or not isinstance(withdrawn, dict):
            return
        text = withdrawn.get("user_content")
        if not isinstance(text, str):
            return
        speaker = withdrawn.get("speaker", kwargs.get("speaker"))
        store = self._store(speaker if isinstance(speaker, str) else None)
        for sentence, _ in _extract.extract(text):
            fact = store.find_by_content(sentence)
            if (
                fact is not None
                and fact.category in AUTO_CATEGORIES
                and fact.created_at == fact.updated_at
            ):
                store.remove(fact.id)

    def on_memory_write(
        self,
        action: str,
        target: str,
        content: str,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """Mirror the built-in memory tool as facts of category ``"memory"`` or ``"user"``.

        ``add`` stores ``content``. ``remove`` gets the text that picked the
        entry: the fact with that content goes, or else the one mirrored fact
        that contains it (none when several do). ``replace`` stores the new
        content in place of the fact ``metadata["old_text"]`` picks the same way
        (the old fact is gone, the new one is there).
        """
        info = metadata or {}
        text = strip_memory_context(content or "").strip()
        category = "user" if target == "user" else "memory"
        speaker = info.get("speaker")
        store = self._store(speaker if isinstance(speaker, str) else None)
        if not text:
            return
        if action == "remove":
            found = _picked(store, text, category)
            if found is not None:
                store.remove(found.id)
            return
        if action not in ("add", "replace") or scan_memory_content(text) is not None:
            return
        old = info.get("old_text")
        previous = None
        if action == "replace" and isinstance(old, str) and old.strip():
            previous = _picked(store, strip_memory_context(old).strip(), category)
        if previous is not None and store.find_by_content(text) is None:
            store.update(previous.id, text, category)
        else:
            if previous is not None:
                store.remove(previous.id)
            store.add(text, category)
        self._fill(store)


def _picked(store: FactStore, text: str, category: str) -> Fact | None:
    """The fact the tool's ``old_text`` picks: the one with that content, or else the one
    mirrored fact of the write's target (``category``) that contains it, or else the one
    of either target (None when none or several do)."""
    fact = store.find_by_content(text)
    if fact is not None:
        return fact
    for categories in ((category,), ("memory", "user")):
        found = store.find_containing(text, categories)
        if found:
            return found[0] if len(found) == 1 else None
    return None

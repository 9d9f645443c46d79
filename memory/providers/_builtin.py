"""The built-in provider: the curated MEMORY.md / USER.md files of :class:`MemoryStore`.

It exists so that the manager always has one provider and so that the files
take part in the provider lifecycle. It adds nothing to the prompt itself: the
agent renders the store's frozen snapshot into the system prompt and runs the
core ``memory`` tool, so this provider has no tools and recalls nothing per turn.
"""

from __future__ import annotations

import logging
from typing import Any

from memory.providers._provider import MemoryProvider
from memory.store import MemoryStore

logger = logging.getLogger(__name__)

BUILTIN_PROVIDER_NAME = "builtin"


class BuiltinMemoryProvider(MemoryProvider):
    """The always-available provider backed by one user's :class:`MemoryStore`."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    @property
    def name(self) -> str:
        return BUILTIN_PROVIDER_NAME

    @property
    def store(self) -> MemoryStore:
        """The store this provider stands for."""
        return self._store

    def is_available(self) -> bool:
        return True

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        logger.debug("builtin memory provider ready for session %s", session_id)

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return []

    def system_prompt_block(self) -> str:
        # The agent injects the store's frozen snapshot itself.
        return ""

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        return ""

"""Who may write the shared MEMORY.md (``memory.shared_writes``).

MEMORY.md reaches every user's system prompt, so a write to it from one
user's session is a channel to everyone else. Admin sessions write directly;
under ``review`` (the default) other sessions' writes are staged for an admin,
under ``admins`` they are refused, under ``open`` they land. Flushes go
through the same memory tool path, so they follow the same policy.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Literal

from memory.staged import StagedWrites
from memory.store import MemoryStore
from memory.threats import scan_memory_content

logger = logging.getLogger(__name__)

Policy = Literal["admins", "review", "open"]

STAGED = (
    "Saved for review (#{id}): an admin has to approve it before it becomes shared memory. "
    "It is NOT shared yet — don't retry it, and don't tell the user it is already saved "
    "for everyone."
)
ADMINS_ONLY = (
    "Only admins can write the shared memory (target 'memory'). If this is about the "
    "user, save it to their profile with target 'user' instead."
)
ACTIONS = frozenset({"add", "replace", "remove"})


@dataclass
class SharedWriteGate:
    policy: Policy
    is_admin: bool
    staging: StagedWrites | None
    session_id: str
    user_key: str

    async def intercept(
        self, store: MemoryStore, arguments: dict[str, Any]
    ) -> dict[str, Any] | None:
        """A result for a write that must not land directly, or None to let it through."""
        action = arguments.get("action")
        if arguments.get("target") != "memory" or action not in ACTIONS:
            return None
        if self.policy == "open" or self.is_admin:
            return None
        content = str(arguments.get("content") or "").strip()
        old_text = str(arguments.get("old_text") or "").strip()
        if self.policy == "admins" or self.staging is None:
            return self._result(store, False, ADMINS_ONLY)
        threat = scan_memory_content(content) if content else None
        if threat is not None:
            return self._result(store, False, threat)
        if (action in ("add", "replace") and not content) or (action != "add" and not old_text):
            return None  # let the store explain what is missing
        staged_id = await asyncio.to_thread(
            self.staging.stage,
            user_key=self.user_key,
            session_id=self.session_id,
            action=str(action),
            content=content,
            old_text=old_text,
        )
        return self._result(store, True, STAGED.format(id=staged_id), staged=True)

    @staticmethod
    def _result(
        store: MemoryStore, success: bool, message: str, *, staged: bool = False
    ) -> dict[str, Any]:
        result: dict[str, Any] = {
            "success": success,
            "target": "memory",
            "message": message,
            "entries": list(store.memory_entries),
        }
        if staged:
            result["staged"] = True
        return result

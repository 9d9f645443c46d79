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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from agent.tools.memory_tool import MemoryCall
from memory.paths import UserKey
from memory.store import MemoryStore, StagedWrites, StagingRefused, scan_memory_content

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
_MISSING = {
    "add": "Nothing to add: give the entry text in 'content'.",
    "replace": "Give both 'old_text' (a unique part of the entry) and the new 'content'.",
    "remove": "Give 'old_text', a unique part of the entry to remove.",
}


@dataclass
class SharedWriteGate:
    """Asks ``policy()`` and ``is_admin()`` at every write, so a reload applies at once."""

    policy: Callable[[], Policy]
    is_admin: Callable[[], bool]
    staging: StagedWrites | None
    session_id: str
    user_key: UserKey

    async def intercept(self, store: MemoryStore, call: MemoryCall) -> dict[str, Any] | None:
        """A result for a write that must not land directly, or None to let it through.

        ``call`` is already resolved (:func:`resolve_memory_call`), so the target
        tested here is the one the store will write.
        """
        if call.target != "memory":
            return None
        policy = self.policy()
        if policy == "open" or self.is_admin():
            return None
        content = call.content.strip()
        old_text = call.old_text.strip()
        if policy == "admins" or self.staging is None:
            return self._result(store, False, ADMINS_ONLY)
        threat = scan_memory_content(content) if content else None
        if threat is not None:
            return self._result(store, False, threat)
        if (call.action in ("add", "replace") and not content) or (
            call.action != "add" and not old_text
        ):
            return self._result(store, False, _MISSING[call.action])
        try:
            staged_id = await asyncio.to_thread(
                self.staging.stage,
                user_key=str(self.user_key),
                session_id=self.session_id,
                action=call.action,
                content=content,
                old_text=old_text,
                max_chars=store.memory_char_limit,
            )
        except StagingRefused as refused:
            return self._result(store, False, str(refused))
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

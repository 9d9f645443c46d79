"""Who may write shared memory (``memory.shared_writes``).

MEMORY.md reaches every user's system prompt, so a write to it from one
user's session is a channel to everyone else. So is a chat's shared profile
(target ``user`` in a ``sessions.scope: chat`` group): it reaches every member's
prompt there. Admins write directly; under ``review`` (the default) others'
writes are staged for an admin, under ``admins`` they are refused, under
``open`` they land. In a shared session the writer is who wrote the turn (a
flush has none, so it is nobody's admin right). Flushes go through the same
memory tool path, so they follow the same policy. A person's own profile is
theirs to write.
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
Decision = Literal["direct", "stage", "refuse"]


def decide(policy: Policy, by_admin: bool, can_stage: bool) -> Decision:
    """What becomes of a write to something shared: it lands, waits for review, or not."""
    if policy == "open" or by_admin:
        return "direct"
    if policy == "admins" or not can_stage:
        return "refuse"
    return "stage"


STAGED = (
    "Saved for review (#{id}): an admin has to approve it before it becomes shared memory. "
    "It is NOT shared yet — don't retry it, and don't tell the user it is already saved "
    "for everyone."
)
ADMINS_ONLY = (
    "Only admins can write the shared memory (target 'memory'). If this is about the "
    "user, save it to their profile with target 'user' instead."
)
PROFILE_STAGED = (
    "Saved for review (#{id}): this group's profile is shared by everyone in it, so an "
    "admin has to approve the change first. It is NOT saved yet — don't retry it, and "
    "don't tell the user it is already saved."
)
PROFILE_ADMINS_ONLY = (
    "Only admins can change this group's profile (target 'user'): it is shared by "
    "everyone in the group. Nothing was saved."
)
_STAGED = {"memory": STAGED, "user": PROFILE_STAGED}
_REFUSED = {"memory": ADMINS_ONLY, "user": PROFILE_ADMINS_ONLY}
_MISSING = {
    "add": "Nothing to add: give the entry text in 'content'.",
    "replace": "Give both 'old_text' (a unique part of the entry) and the new 'content'.",
    "remove": "Give 'old_text', a unique part of the entry to remove.",
}


@dataclass
class SharedWriteGate:
    """Asks ``policy()`` and ``is_admin(writer)`` at every write, so a reload applies at once."""

    policy: Callable[[], Policy]
    is_admin: Callable[[UserKey], bool]
    staging: StagedWrites | None
    session_id: str
    user_key: UserKey
    """Whose profile the session writes: a person's, or a chat's shared one."""
    speaker: UserKey | None = None
    """Who wrote the turn being answered (set by the agent; None in a flush)."""

    @property
    def writer(self) -> UserKey | None:
        """Who a write is by: the session's person, or in a shared session the turn's writer."""
        return self.speaker if self.user_key.chat else self.user_key

    async def intercept(self, store: MemoryStore, call: MemoryCall) -> dict[str, Any] | None:
        """A result for a write that must not land directly, or None to let it through.

        ``call`` is already resolved (:func:`resolve_memory_call`), so the target
        tested here is the one the store will write.
        """
        target = call.target
        if target == "user" and not self.user_key.chat:  # a person's own profile
            return None
        writer = self.writer
        by_admin = writer is not None and self.is_admin(writer)
        decision = decide(self.policy(), by_admin, self.staging is not None)
        if decision == "direct":
            return None
        content = call.content.strip()
        old_text = call.old_text.strip()
        if decision == "refuse" or self.staging is None:
            return self._result(store, target, False, _REFUSED[target])
        threat = scan_memory_content(content) if content else None
        if threat is not None:
            return self._result(store, target, False, threat)
        if (call.action in ("add", "replace") and not content) or (
            call.action != "add" and not old_text
        ):
            return self._result(store, target, False, _MISSING[call.action])
        profile = str(self.user_key) if target == "user" else None
        try:
            staged_id = await asyncio.to_thread(
                self.staging.stage,
                user_key=str(writer or self.user_key),
                session_id=self.session_id,
                action=call.action,
                content=content,
                old_text=old_text,
                max_chars=store.memory_char_limit if profile is None else store.user_char_limit,
                profile=profile,
            )
        except StagingRefused as refused:
            return self._result(store, target, False, str(refused))
        text = _STAGED[target].format(id=staged_id)
        return self._result(store, target, True, text, staged=True)

    @staticmethod
    def _result(
        store: MemoryStore, target: str, success: bool, message: str, *, staged: bool = False
    ) -> dict[str, Any]:
        entries = store.memory_entries if target == "memory" else store.user_entries
        result: dict[str, Any] = {
            "success": success,
            "target": target,
            "message": message,
            "entries": list(entries),
        }
        if staged:
            result["staged"] = True
        return result

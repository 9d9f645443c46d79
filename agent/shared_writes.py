"""Who may write the shared MEMORY.md (``memory.shared_writes``).

MEMORY.md reaches every user's system prompt, so a write to it from one
user's session is a channel to everyone else. Admin sessions write directly;
under ``review`` (the default) other sessions' writes are staged for an admin,
under ``admins`` they are refused, under ``open`` they land. Flushes go
through the same memory tool path, so they follow the same policy.

A turn that carries others' content (``others_content``: thread context, a
forwarded message, a tool result — see ``agent.others``) could be someone
else's words riding an admin's session, so under ``review`` and ``admins`` an
admin's write in it is staged for review too. Every write the gate stages or
lets land is recorded in the audit log with its session (``audit``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

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
STAGED_OTHERS = (
    "Saved for review (#{id}): this turn carries other people's words (quoted messages "
    "or tool results), so a write to the shared memory waits for an admin's approval. "
    "It is NOT shared yet — don't retry it, and don't tell the user it is already saved "
    "for everyone."
)
OTHERS_UNREVIEWED = (
    "Not saved: this turn carries other people's words (quoted messages or tool "
    "results), and the shared memory takes such writes only through review."
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


class WriteAudit(Protocol):
    """Appends one row to the audit log (blocking; called off the event loop)."""

    def __call__(self, actor: str, command: str, args: str, outcome: str) -> object: ...


@dataclass
class SharedWriteGate:
    """Asks ``policy()`` and ``is_admin()`` at every write, so a reload applies at once."""

    policy: Callable[[], Policy]
    is_admin: Callable[[], bool]
    staging: StagedWrites | None
    session_id: str
    user_key: UserKey
    audit: WriteAudit | None = None
    others_content: bool = False
    """The current turn carries others' content; set by the agent for each turn."""

    async def intercept(self, store: MemoryStore, call: MemoryCall) -> dict[str, Any] | None:
        """A result for a write that must not land directly, or None to let it through.

        ``call`` is already resolved (:func:`resolve_memory_call`), so the target
        tested here is the one the store will write.
        """
        if call.target != "memory":
            return None
        policy = self.policy()
        admin = self.is_admin()
        if policy == "open" or (admin and not self.others_content):
            return None
        content = call.content.strip()
        old_text = call.old_text.strip()
        if (policy == "admins" and not admin) or self.staging is None:
            return self._result(store, False, OTHERS_UNREVIEWED if admin else ADMINS_ONLY)
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
        await self.record(call, f"staged #{staged_id}")
        if admin:
            logger.info(
                "an admin's shared memory %s in session %s is staged as #%d: its turn "
                "carries others' content",
                call.action,
                self.session_id,
                staged_id,
            )
        staged = STAGED_OTHERS if admin else STAGED
        return self._result(store, True, staged.format(id=staged_id), staged=True)

    async def record(self, call: MemoryCall, outcome: str) -> None:
        """An audit row for a write to the shared memory (``outcome``: ``ok``, ``staged #n``)."""
        if self.audit is None or call.target != "memory":
            return
        content, old_text = call.content.strip(), call.old_text.strip()
        text = f"{old_text} → {content}" if call.action == "replace" else content or old_text
        args = f"session {self.session_id}: {text}"
        try:
            await asyncio.to_thread(
                self.audit, str(self.user_key), f"model memory {call.action}", args, outcome
            )
        except Exception as exc:  # the write stands; the log says the row is missing
            logger.warning(
                "no audit row for a shared memory %s of session %s (%s)",
                call.action,
                self.session_id,
                type(exc).__name__,
            )

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

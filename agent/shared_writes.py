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
Decision = Literal["direct", "stage", "refuse"]


def decide(policy: Policy, by_admin: bool, can_stage: bool, others: bool = False) -> Decision:
    """What becomes of a write to something shared: it lands, waits for review, or not.

    ``others``: the turn carries others' content, so an admin's write waits for review.
    """
    if policy == "open" or (by_admin and not others):
        return "direct"
    if (policy == "admins" and not by_admin) or not can_stage:
        return "refuse"
    return "stage"


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


class WriteAudit(Protocol):
    """Appends one row to the audit log (blocking; called off the event loop)."""

    def __call__(self, actor: str, command: str, args: str, outcome: str) -> object: ...


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
    audit: WriteAudit | None = None
    account: UserKey | None = None
    """The account the session is with when ``user_key`` is a linked person's key:
    whether a write is an admin's is asked of the account."""
    others_content: bool = False
    """The current turn carries others' content; set by the agent for each turn."""

    @property
    def writer(self) -> UserKey | None:
        """Who a write is by: the session's person, or in a shared session the turn's writer."""
        if self.user_key.chat:
            return self.speaker
        return self.account if self.account is not None else self.user_key

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
        others = self.others_content
        decision = decide(self.policy(), by_admin, self.staging is not None, others)
        if decision == "direct":
            return None
        content = call.content.strip()
        old_text = call.old_text.strip()
        if decision == "refuse" or self.staging is None:
            refused = OTHERS_UNREVIEWED if by_admin else _REFUSED[target]
            return self._result(store, target, False, refused)
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
        await self.record(call, f"staged #{staged_id}")
        if by_admin:
            logger.info(
                "an admin's shared memory %s in session %s is staged as #%d: its turn "
                "carries others' content",
                call.action,
                self.session_id,
                staged_id,
            )
        staged = STAGED_OTHERS if by_admin and target == "memory" else _STAGED[target]
        return self._result(store, target, True, staged.format(id=staged_id), staged=True)

    async def record(self, call: MemoryCall, outcome: str) -> None:
        """An audit row for a write to something shared (``outcome``: ``ok``, ``staged #n``)."""
        shared = call.target == "memory" or (call.target == "user" and self.user_key.chat)
        if self.audit is None or not shared:
            return
        content, old_text = call.content.strip(), call.old_text.strip()
        text = f"{old_text} → {content}" if call.action == "replace" else content or old_text
        args = f"session {self.session_id}: {text}"
        command = f"model memory {call.action}"
        if call.target == "user":
            command = f"model profile {call.action}"
        try:
            await asyncio.to_thread(
                self.audit, str(self.writer or self.user_key), command, args, outcome
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

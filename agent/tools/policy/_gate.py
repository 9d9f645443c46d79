"""``ToolGate``: one session's side of the tool policy, asked twice for every tool.

When a request is built, ``offer`` keeps only the tools the person may use; when
the model calls a tool, ``refusal`` asks again — the policy in effect *now*, for
the person who wrote the turn — and refuses a tool that was not offered in that
very request (a name the model made up or was talked into) as well as one the
policy does not allow. A refusal is an error result for the model, one log line
and one audit row; the tool never runs.

In a session several people share (``sessions.scope: chat``) the person is who
wrote the turn; a turn with no single writer is nobody's, so only rules that name
no one apply to it, with the rights of a user.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any

from agent.context import SessionContext
from agent.shared_writes import WriteAudit
from agent.tools.policy._approval import ApprovalRequest, Approver
from agent.tools.policy._policy import ChatPlace, Decision, ToolPolicy
from agent.tools.registry import CORE_TOOL_NAMES, tool_error
from memory.paths import UserKey

__all__ = ["ToolGate", "offered_names", "refuse_not_offered"]

logger = logging.getLogger(__name__)

NOT_OFFERED = (
    "unknown tool {name!r}: it is not one of the tools offered in this conversation, "
    "so it was not run"
)
DENIED = "tool {name!r} is not available to this person here (the tool policy denies it)"
NEEDS_APPROVAL = (
    "tool {name!r} needs approval: the tool policy allows it only with someone's "
    "approval, and there is no one to ask here, so it was not run"
)
AUDIT_COMMAND = "model tool call"
NAME_SHOWN = 100
"""Characters of a refused tool's name kept in the log and the audit row."""


def offered_names(schemas: Iterable[dict[str, Any]]) -> frozenset[str]:
    """The function names of an OpenAI ``tools`` list."""
    return frozenset(str(s["function"]["name"]) for s in schemas if "function" in s)


@dataclass
class ToolGate:
    """Asks ``policy()`` and ``is_admin(person)`` at every use, so a reload applies at once."""

    session: SessionContext
    policy: Callable[[], ToolPolicy]
    is_admin: Callable[[UserKey], bool]
    audit: WriteAudit | None = None
    approver: Approver | None = None
    """Asks for approval of ``ask`` tools; without one they are treated as denied."""

    def person(self, speaker: UserKey | None) -> UserKey | None:
        """Whose call it is: the session's account, or in a shared session the turn's writer."""
        return speaker if self.session.user_key.chat else self.session.actor

    def decide(self, tool: str, speaker: UserKey | None) -> Decision:
        person = self.person(speaker)
        admin = person is not None and self.is_admin(person)
        session = self.session
        return self.policy().decide(
            None if person is None else str(person),
            "admin" if admin else "user",
            session.platform,
            ChatPlace(session.chat_id, bool(session.is_direct)),
            tool,
        )

    def offer(
        self, schemas: Iterable[dict[str, Any]], speaker: UserKey | None
    ) -> list[dict[str, Any]]:
        """The tools of ``schemas`` this person may use here (allowed, or ``ask`` when there
        is someone to ask)."""
        kept = []
        for schema in schemas:
            name = str(schema.get("function", {}).get("name", ""))
            if self._usable(self.decide(name, speaker), speaker):
                kept.append(schema)
        return kept

    def _usable(self, decision: Decision, speaker: UserKey | None) -> bool:
        if decision.allowed:
            return True
        return (
            decision.action == "ask"
            and self.approver is not None
            and self.person(speaker) is not None
        )

    async def refusal(
        self, name: str, offered: Collection[str], speaker: UserKey | None, arguments: str = ""
    ) -> str | None:
        """The error result for a call that may not run (audited), or None to run it. A call
        to an ``ask`` tool waits here for the approver's answer."""
        if name in CORE_TOOL_NAMES:
            return None
        decision = self.decide(name, speaker)
        if name in offered and decision.allowed:
            return None
        person = self.person(speaker)
        if name in offered and self._usable(decision, speaker):
            assert self.approver is not None and person is not None
            request = ApprovalRequest(self.session, person, name, arguments)
            return await self.approver.approve(request)
        said = "" if decision.allowed else f"{decision.action} ({decision.source})"
        if name not in offered:
            outcome = "refused:not offered" + (f", {said}" if said else "")
        else:  # offered, and the policy changed its mind since
            outcome = f"refused:{said}"
        await self._refused(name, speaker, outcome)
        if decision.action == "ask":
            return tool_error(NEEDS_APPROVAL.format(name=name))
        text = DENIED if name in offered else NOT_OFFERED
        return tool_error(text.format(name=name))

    async def not_offered(self, name: str, speaker: UserKey | None) -> str:
        """The refusal of a call to a tool the request did not offer (audited), whatever it is:
        for a request that offers only some tools (the memory flush offers ``memory`` alone)."""
        await self._refused(name, speaker, "refused:not offered")
        return tool_error(NOT_OFFERED.format(name=name))

    async def _refused(self, name: str, speaker: UserKey | None, outcome: str) -> None:
        person = self.person(speaker)
        actor = str(person if person is not None else self.session.user_key)
        await record_refusal(self.audit, self.session.session_id, actor, name, outcome)


async def refuse_not_offered(
    name: str, *, session_id: str, actor: str, audit: WriteAudit | None
) -> str:
    """:meth:`ToolGate.not_offered` where no session's gate is at hand (a job's flush)."""
    await record_refusal(audit, session_id, actor, name, "refused:not offered")
    return tool_error(NOT_OFFERED.format(name=name))


async def record_refusal(
    audit: WriteAudit | None, session_id: str, actor: str, name: str, outcome: str
) -> None:
    """One log line and one audit row for a tool call that was not run."""
    name = name[:NAME_SHOWN]
    logger.warning(
        "tool call %r in session %s refused for %s: %s", name, session_id, actor, outcome
    )
    if audit is None:
        return
    try:
        args = f"session {session_id}: {name}"
        await asyncio.to_thread(audit, actor, AUDIT_COMMAND, args, outcome)
    except Exception as exc:  # the refusal stands; the log says the row is missing
        logger.warning(
            "no audit row for a refused tool call in session %s (%s)",
            session_id,
            type(exc).__name__,
        )

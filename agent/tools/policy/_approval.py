"""``Approver``: who answers a call a ``tools.policy`` rule answered with ``ask``.

The gateway gives one (``gateway.commands.ApprovalDesk``): it asks the person (or the
admins) in the chat and waits, bounded, for their answer. The gate runs the
call only when ``approve`` returns None; anything else is the refusal the
model is told.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from agent.context import SessionContext
from memory.paths import UserKey

__all__ = ["ApprovalRequest", "Approver"]


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """One tool call waiting for approval."""

    session: SessionContext
    person: UserKey
    tool: str
    arguments: str
    """As the model wrote them (JSON text), shown whole."""


class Approver(Protocol):
    async def approve(self, request: ApprovalRequest) -> str | None:
        """None when the call may run; else why not (for the model)."""
        ...

"""What a command may use: a narrow interface built in the wiring, never the runner.

``CommandServices`` is the whole of it. ``gateway.app`` implements it over the
session manager, the access lists, the memory files, the staged shared-memory
writes, the job queue, the audit table and the metrics; tests may implement it
over anything else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from gateway.access import AdminReply, RequestStatus, UserAccessRow
from gateway.budgets import BudgetMeter
from gateway.clock import Clock
from gateway.config import Settings
from gateway.events import InboundMessage
from memory.jobs import BackgroundQueue
from memory.paths import UserKey
from memory.store import MemoryStore, StagedWrites

if TYPE_CHECKING:
    from agent.agent import Agent
    from gateway.sessions import LiveSession


class SessionControl(Protocol):
    """The part of the session manager that commands drive."""

    @property
    def sessions(self) -> list[LiveSession]:
        """Every open session."""
        ...

    def get(self, msg: InboundMessage) -> LiveSession | None:
        """The open session ``msg`` belongs to, if any."""
        ...

    def profile_key(self, msg: InboundMessage) -> UserKey:
        """Whose profile the session of ``msg`` loads."""
        ...

    async def agent_for(self, live: LiveSession) -> Agent:
        """The session's agent, built or rebuilt on demand."""
        ...

    async def submit(self, msg: InboundMessage) -> bool:
        """Queue a message for its session."""
        ...

    async def reset(self, msg: InboundMessage) -> bool:
        """End the sender's session now; False when there was none."""
        ...

    async def end(self, live: LiveSession, reason: str, *, notify_next: bool = True) -> None:
        """End a session (the ending work runs as a background job)."""
        ...


class AccessControl(Protocol):
    """The access lists as admins change them."""

    def users(self) -> list[UserAccessRow]: ...

    def allow(self, user_key: str, by: str) -> AdminReply: ...

    def deny(self, user_key: str, by: str) -> AdminReply: ...

    def approve_code(self, code: str, by: str) -> AdminReply: ...


class PairingControl(Protocol):
    """Strangers' pairing requests as admins decide them (``gateway.commands.PairingDesk``)."""

    async def approve(self, ref: str, by: str) -> AdminReply: ...

    async def deny(self, ref: str, by: str) -> AdminReply: ...

    async def settled(self, user_key: str, status: RequestStatus, by: str) -> None:
        """``user_key`` was approved or denied some other way: settle their requests."""
        ...


class PeopleControl(Protocol):
    """Linking accounts into one person, as admins do it (``/admin link|unlink``)."""

    async def admin_link(self, first: str, second: str, by: str) -> AdminReply: ...

    async def admin_unlink(self, account: str, by: str) -> AdminReply: ...

    async def person_of(self, account: str) -> str:
        """The person key ``account`` counts under (its own key when it is not linked)."""
        ...

    async def whoami_lines(self, account: str) -> list[str]:
        """The person ``account`` is part of, and its accounts (for ``/whoami``)."""
        ...


class CommandServices(Protocol):
    """Everything commands reach; see the module docstring."""

    @property
    def clock(self) -> Clock: ...

    @property
    def settings(self) -> Settings:
        """The settings in effect now (after any ``/admin reload``)."""
        ...

    @property
    def sessions(self) -> SessionControl: ...

    @property
    def access(self) -> AccessControl: ...

    @property
    def staging(self) -> StagedWrites | None:
        """Staged writes to shared memory (MEMORY.md, groups' profiles), where this process
        has them."""
        ...

    @property
    def queue(self) -> BackgroundQueue: ...

    @property
    def budgets(self) -> BudgetMeter | None:
        """The usage ledger and per-person budgets (None where usage is not recorded)."""
        ...

    @property
    def people(self) -> PeopleControl | None:
        """Linked accounts (None where this process has no people store)."""
        ...

    @property
    def pairing(self) -> PairingControl | None:
        """Strangers' pairing requests (None where admins are not told of them)."""
        ...

    def store_for(self, key: UserKey | None) -> MemoryStore:
        """The shared MEMORY.md plus ``key``'s own profile (None: MEMORY.md only)."""
        ...

    async def audit(self, actor: str, command: str, args: str, outcome: str) -> None:
        """Append one row to the audit table."""
        ...

    def count(self, command: str, outcome: str) -> None:
        """Count one command run in the metrics."""
        ...

    async def status_lines(self) -> list[str]:
        """Admin lines for ``/status``: review queue, sessions, job queue."""
        ...

    async def stats_lines(self) -> list[str]:
        """``/admin stats``: recent activity and counters since start."""
        ...

    async def reload(self) -> str:
        """Re-read the configuration; returns what happened."""
        ...

    async def tool_names(self, msg: InboundMessage) -> list[str]:
        """Every tool beyond the core ones the agent of ``msg``'s chat has, before the
        tool policy, sorted."""
        ...

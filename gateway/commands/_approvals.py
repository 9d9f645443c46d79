"""``ApprovalDesk``: a call to an ``ask`` tool waits here for a person's answer.

``approve`` (the agent's ``Approver``) stores a pending row (``memory.approvals``),
shows the person who wrote the turn — or, with ``tools.approval: admin``, every
admin in a direct message — the tool, its server and its arguments whole (hidden
characters made visible), with **Approve** / **Deny** buttons where the platform
has them (each stands for the typed ``/approve ID`` / ``/deny ID``, which work
everywhere), and waits at most ``tools.approval_timeout`` seconds. No answer is
a refusal the model is told about, and the person is told too.

``/approve ID`` and ``/deny ID`` decide: only the person asked (or an admin, for
``admin`` approvals) may; anyone else's press or command changes nothing and
they are told so. Every decision is one audit row and one log line. The row is
decided once in the database, so an answer given on another replica reaches the
waiting turn too (it looks every ``POLL_SECONDS``).

After a restart, ``start`` marks the approvals the previous process left
pending as expired (their turn cannot resume) and tells each person.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping

from agent.shared_writes import WriteAudit
from agent.tools.policy import MCP_SEPARATOR, ApprovalRequest
from agent.tools.registry import tool_error
from gateway.adapters import AdapterError, BaseAdapter, split_text
from gateway.clock import Clock
from gateway.commands import _approval_texts as t
from gateway.commands._registry import Command, CommandContext, CommandRegistry
from gateway.config import LiveSettings
from gateway.events import OutboundMessage
from memory.approvals import Approval, ApprovalStore
from memory.errors import ApprovalStoreError
from memory.store import make_visible

__all__ = ["POLL_SECONDS", "ApprovalDesk"]

logger = logging.getLogger(__name__)

POLL_SECONDS = 1.0
"""How often a waiting call looks in the database for an answer given elsewhere."""
ADMINS = "admins"
AUDIT_COMMAND = "tool approval"


class ApprovalDesk:
    def __init__(
        self,
        store: ApprovalStore,
        live: LiveSettings,
        clock: Clock,
        adapters: Mapping[str, BaseAdapter],
        *,
        audit: WriteAudit | None = None,
        is_admin: Callable[[str], bool] | None = None,
        several_replicas: bool = False,
    ) -> None:
        self.store = store
        self._live = live
        self._clock = clock
        self._adapters = adapters
        self._audit = audit
        self._is_admin = is_admin or (lambda _: False)
        self._several = several_replicas
        self.owner = uuid.uuid4().hex
        """This process: the rows it waits for carry it."""
        self._waiting: dict[str, asyncio.Future[str]] = {}

    # ------------------------------------------------------------------ asking

    async def approve(self, request: ApprovalRequest) -> str | None:
        """The ``Approver``: None when the call was approved, else the model's refusal."""
        tools = self._live.current.tools
        seconds = tools.approval_timeout
        session = request.session
        person = str(request.person)
        asked = ADMINS if tools.approval == "admin" else person
        if asked == ADMINS and not self._admins(session.platform):
            await self._record(person, request.tool, "refused:no admin to ask")
            return tool_error(t.REFUSED_NO_ADMIN.format(tool=request.tool))
        now = self._clock.time()
        pending = Approval(
            "", person, asked, session.platform, session.chat_id, session.thread_id,
            session.session_id, request.tool, request.arguments, self.owner, "pending", None,
            now, now + seconds,
        )  # fmt: skip
        try:
            row = await asyncio.to_thread(self.store.create, pending)
        except ApprovalStoreError as exc:
            logger.warning("an approval for %s could not be stored (%s)", request.tool, exc)
            return tool_error(t.REFUSED_UNASKED.format(tool=request.tool))
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiting[row.id] = future
        deadline = asyncio.ensure_future(self._clock.sleep(seconds))  # from now on
        try:
            await asyncio.sleep(0)
            if not await self._ask(row, seconds):
                await self._settle(row.id, "failed", None)
                return tool_error(t.REFUSED_UNASKED.format(tool=request.tool))
            logger.info("tool %s of %s waits for approval %s", row.tool, person, row.id)
            status, by = await self._wait(row, future, deadline)
        finally:
            self._waiting.pop(row.id, None)
            deadline.cancel()
        if status == "approved":
            return None
        if status == "denied":
            return tool_error(t.REFUSED_DENIED.format(tool=row.tool, by=by or "someone"))
        await self._record(person, row.tool, f"timeout {row.id}")
        await self._tell(row, t.TIMED_OUT.format(id=row.id, tool=row.tool, seconds=_s(seconds)))
        return tool_error(t.REFUSED_TIMEOUT.format(tool=row.tool, seconds=_s(seconds)))

    async def _wait(
        self, row: Approval, future: asyncio.Future[str], deadline: asyncio.Future[None]
    ) -> tuple[str, str | None]:
        """The answer (status, who gave it); ``timeout`` when the wait ran out."""
        poll = asyncio.ensure_future(self._poll(row.id))
        waits: set[asyncio.Future[object]] = {future, deadline, poll}  # type: ignore[arg-type]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (deadline, poll):
                task.cancel()
            await asyncio.gather(deadline, poll, return_exceptions=True)
        if not future.done() and await self._settle(row.id, "timeout", None):
            return "timeout", None
        current = await asyncio.to_thread(self.store.get, row.id)  # decided meanwhile
        if current is None or current.status not in ("approved", "denied"):
            return "timeout", None
        return current.status, current.decided_by

    async def _poll(self, approval_id: str) -> None:
        """Returns when the row was decided (on any replica)."""
        while True:
            await asyncio.sleep(POLL_SECONDS)
            with contextlib.suppress(ApprovalStoreError):
                row = await asyncio.to_thread(self.store.get, approval_id)
                if row is None or row.status != "pending":
                    return

    async def _settle(self, approval_id: str, status: str, by: str | None) -> bool:
        try:
            return await asyncio.to_thread(self.store.decide, approval_id, status, by)
        except ApprovalStoreError as exc:
            logger.warning("approval %s could not be settled (%s)", approval_id, exc)
            return False

    async def _ask(self, row: Approval, seconds: float) -> bool:
        """Show the approval to whoever decides it; False when it reached nobody."""
        server, _, tool = row.tool.partition(MCP_SEPARATOR)
        if not tool:
            server, tool = "(none)", row.tool
        person = "" if row.asked != ADMINS else t.FOR_PERSON.format(person=row.person)
        text = t.PROMPT.format(
            id=row.id,
            for_whom=person,
            tool=tool,
            server=server,
            arguments=_shown(row.arguments),
            seconds=_s(seconds),
        )
        choices = [(t.APPROVE, f"/approve {row.id}"), (t.DENY, f"/deny {row.id}")]
        adapter = self._adapters.get(row.platform)
        if adapter is None:
            return False
        capabilities = adapter.capabilities
        parts = split_text(text, capabilities.max_text_length, length=capabilities.length)
        reached = False
        for index, part in enumerate(parts):  # long arguments: the buttons on the last part
            buttons = choices if index == len(parts) - 1 else []
            if row.asked != ADMINS:
                out = OutboundMessage(row.platform, row.chat_id, part, thread_id=row.thread_id)
                sends: list[Awaitable[object]] = [adapter.send_choice(out, buttons)]
            else:
                sends = [
                    adapter.send_choice_privately(admin_id, part, buttons)
                    for admin_id in self._admins(row.platform)
                ]
            for send in sends:
                try:
                    await send
                    reached = True
                except Exception as exc:  # a platform's refusal: the others may still see it
                    reason = str(exc) if isinstance(exc, AdapterError) else type(exc).__name__
                    logger.warning("approval %s could not be shown in a chat (%s)", row.id, reason)
        return reached

    def _admins(self, platform: str) -> list[str]:
        """The ids of the admins on ``platform`` (their direct messages)."""
        ids = []
        for key in self._live.current.auth.admins:
            where, _, user_id = key.partition(":")
            if where == platform and user_id:
                ids.append(user_id)
        return ids

    async def _tell(self, row: Approval, text: str) -> None:
        adapter = self._adapters.get(row.platform)
        if adapter is None:
            logger.warning("approval %s: no %s adapter to tell its person", row.id, row.platform)
            return
        out = OutboundMessage(row.platform, row.chat_id, text, thread_id=row.thread_id)
        try:
            await adapter.send(out)
        except AdapterError as exc:
            logger.warning("approval %s: its person could not be told (%s)", row.id, exc)

    async def _record(self, actor: str, tool: str, outcome: str) -> None:
        logger.info("tool approval: %s %s by %s", tool, outcome, actor)
        if self._audit is None:
            return
        try:
            await asyncio.to_thread(self._audit, actor, AUDIT_COMMAND, tool[:100], outcome)
        except Exception as exc:
            logger.warning("no audit row for a tool approval (%s)", type(exc).__name__)

    # ------------------------------------------------------------------ restart

    async def start(self) -> None:
        """Tell the people whose approvals a previous process left pending that they expired."""
        try:
            left = await asyncio.to_thread(
                self.store.expire_left_by,
                self.owner,
                self._clock.time() if self._several else None,
            )
        except ApprovalStoreError as exc:
            logger.warning("approvals left pending could not be looked up (%s)", exc)
            return
        for row in left:
            await self._record(row.person, row.tool, f"expired {row.id}: restart")
            await self._tell(row, t.EXPIRED_RESTART.format(id=row.id, tool=row.tool))

    # ------------------------------------------------------------------ deciding

    def register(self, registry: CommandRegistry) -> None:
        for verb, text in (("approve", "run"), ("deny", "refuse")):
            registry.register(
                Command(
                    verb,
                    f"{text} a tool call waiting for your approval",
                    self._approve_command if verb == "approve" else self._deny_command,
                    admin_only=False,
                    args="ID",
                )
            )

    async def _approve_command(self, ctx: CommandContext) -> str:
        return await self._decide(ctx, "approve")

    async def _deny_command(self, ctx: CommandContext) -> str:
        return await self._decide(ctx, "deny")

    async def _decide(self, ctx: CommandContext, verb: str) -> str:
        approval_id = ctx.args.strip().lstrip("#").lower()
        if not approval_id or " " in approval_id:
            return t.USAGE.format(verb=verb)
        shown = approval_id[:20]
        by = str(ctx.user_key)
        row = await asyncio.to_thread(self.store.get, approval_id)
        if row is None:
            return t.NO_SUCH.format(id=shown)
        if not (row.asked == by or (row.asked == ADMINS and self._is_admin(by))):
            logger.info("approval %s: %s is not the one asked, nothing changed", row.id, by)
            return t.NOT_YOURS.format(id=row.id)
        orphan = row.owner == self.owner and row.id not in self._waiting
        # this process asked, and the call no longer waits (its turn was stopped)
        if row.status == "pending" and orphan and await self._settle(row.id, "expired", None):
            await self._record(by, row.tool, f"expired {row.id}: the turn was stopped")
            return t.EXPIRED_STOPPED.format(id=row.id, tool=row.tool)
        status = "approved" if verb == "approve" else "denied"
        if row.status != "pending" or not await self._settle(row.id, status, by):
            current = await asyncio.to_thread(self.store.get, row.id)
            return t.ALREADY.format(id=row.id, status=current.status if current else "gone")
        await self._record(by, row.tool, f"{status} {row.id} (call of {row.person})")
        future = self._waiting.get(row.id)
        if future is not None and not future.done():
            future.set_result(status)
        done = t.APPROVED if status == "approved" else t.DENIED
        return done.format(id=row.id, tool=row.tool)


def _shown(arguments: str) -> str:
    """The arguments whole, one per line when they are a JSON object, hidden characters
    made visible."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return make_visible(arguments)
    return make_visible(json.dumps(parsed, ensure_ascii=False, indent=2))


def _s(seconds: float) -> str:
    return f"{seconds:g}"

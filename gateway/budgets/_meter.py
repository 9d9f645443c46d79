"""``BudgetMeter``: the usage ledger and the per-person budgets, as the agent's ``UsageMeter``.

Before each LLM call the meter holds an estimate of it in the person's day
and month counters (``LocalSpend`` in one process, ``SharedSpend`` in Redis); a
call of a turn is refused there (``BudgetExhausted``, no request made) once the
person's tokens per day or cost per month are reached; background calls
(flush, handoff summary) are never refused but counted. After the call the
hold is replaced by what the endpoint reported and the call goes to the
ledger — written by a background task in batches, so a turn never waits for
the database. A failure of the counters (Redis unreachable) lets the call go
and logs a warning: a budget never stops the service.

``check()`` is the same test without a hold, made before a turn starts;
``notice()`` after a turn says, once per period, that a person passed
``budgets.notice_at`` of a limit; ``status()`` is what ``/usage`` shows. The
notice does not read the counters again: it adds what the person's calls used
since to what the turn's check read (the counters are read anew when the period
changed or no check read them).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from agent.errors import BudgetExhausted
from agent.usage import Charge
from gateway.budgets import _texts as t
from gateway.budgets._periods import Window, windows
from gateway.budgets._pricing import cost_of, dearest
from gateway.budgets._spend import Limits, SpendCounters, Spent, over
from gateway.config import BudgetLimits, Settings
from memory.usage_ledger import LedgerRow, UsageLedger

__all__ = ["BudgetMeter", "Hold", "UsageStatus"]

logger = logging.getLogger(__name__)

DAY = 86_400.0
PURGE_INTERVAL = 3_600.0
"""Seconds between two purges of old ledger rows by one process."""
WARN_INTERVAL = 60.0
"""Seconds between two warnings that the counters cannot be used."""
OVERRIDES_TTL = 10.0
"""Seconds a process trusts its copy of the limits set with ``/admin budget``."""


@dataclass(frozen=True)
class Hold:
    charge: Charge
    day: Window
    month: Window
    tokens: int
    cost: float
    held: bool
    """False when the counters could not be reached: nothing to give back."""


@dataclass
class _Checked:
    """A person's spent tokens (day) and cost (month) as the check read them, plus the
    calls settled by this meter since."""

    day: str
    month: str
    tokens: float
    cost: float


@dataclass(frozen=True)
class UsageStatus:
    person: str
    day: Window
    month: Window
    spent_day: Spent
    spent_month: Spent
    limits: Limits


class BudgetMeter:
    def __init__(
        self,
        settings: Callable[[], Settings],
        ledger: UsageLedger,
        counters: SpendCounters,
        *,
        is_admin: Callable[[str], bool],
        clock: Callable[[], float] = time.time,
        write_through: bool = False,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self._on_close = on_close
        self._settings = settings
        self.ledger = ledger
        self.counters = counters
        self._is_admin = is_admin
        self._clock = clock
        self._write_through = write_through
        """Write each call to the ledger before returning (job threads, whose loop idles)."""
        self._pending: list[LedgerRow] = []
        self._writer: asyncio.Task[None] | None = None
        self._purged_at: float | None = None
        self._overrides: tuple[float, dict[str, BudgetLimits]] | None = None
        self._warned_at: float | None = None
        self._checked: dict[str, _Checked] = {}

    # ------------------------------------------------------------------ limits

    def limits_for(self, person: str, chat: str | None = None) -> Limits:
        """The person's own limits, else the chat's, else their role's; a limit an admin
        set (``/admin budget``) replaces that kind of limit from the settings."""
        budgets = self._settings().budgets
        chosen = budgets.people.get(person) or (budgets.chats.get(chat) if chat else None)
        if chosen is None:
            chosen = budgets.admin if self._is_admin(person) else budgets.user
        tokens, cost = chosen.tokens_per_day, chosen.cost_per_month
        set_by_admin = self._admin_overrides().get(person)
        if set_by_admin is not None:
            if set_by_admin.tokens_per_day is not None:
                tokens = set_by_admin.tokens_per_day
            if set_by_admin.cost_per_month is not None:
                cost = set_by_admin.cost_per_month
        return Limits(tokens, cost)

    def _admin_overrides(self) -> dict[str, BudgetLimits]:
        now = self._clock()
        if self._overrides is None or now - self._overrides[0] > OVERRIDES_TTL:
            try:
                found = self.ledger.overrides()
            except Exception as exc:
                logger.warning("budget overrides unreadable (%s)", type(exc).__name__)
                return {} if self._overrides is None else self._overrides[1]
            limits = {
                p: BudgetLimits(tokens_per_day=o.tokens_per_day, cost_per_month=o.cost_per_month)
                for p, o in found.items()
            }
            self._overrides = (now, limits)
        return self._overrides[1]

    def overrides_changed(self) -> None:
        """Read the admins' limits again at the next call (one was just set here)."""
        self._overrides = None

    def windows(self) -> tuple[Window, Window]:
        return windows(self._clock(), self._settings().sessions.timezone)

    # ------------------------------------------------------------------ UsageMeter

    async def reserve(self, charge: Charge, model: str, estimate: int) -> object:
        day, month = self.windows()
        cost = dearest(self._settings().llm.pricing, model, estimate)
        limits = None if charge.background else self.limits_for(charge.person, charge.chat)
        try:
            reached = await self.counters.hold(charge.person, day, month, estimate, cost, limits)
        except Exception as exc:
            self._unchecked(exc)
            return Hold(charge, day, month, 0, 0.0, held=False)
        if reached is not None and limits is not None:
            logger.info("LLM call refused: %s reached its %s budget", charge.person, reached)
            raise BudgetExhausted(self._refusal(reached, limits, day, month))
        return Hold(charge, day, month, estimate, cost, held=True)

    async def settle(
        self, hold: object, model: str, usage: tuple[int, int, int], *, estimated: bool
    ) -> None:
        assert isinstance(hold, Hold)
        input_tokens, cached, output = usage
        cost = cost_of(self._settings().llm.pricing, model, input_tokens, cached, output)
        charge = hold.charge
        row = LedgerRow(
            self._clock(),
            charge.person,
            charge.session_id,
            charge.purpose,
            model,
            input_tokens,
            cached,
            output,
            estimated,
            cost,
        )
        await self._record(row)
        checked = self._checked.get(charge.person)
        if checked is not None and (checked.day, checked.month) == (hold.day.key, hold.month.key):
            checked.tokens += input_tokens + output
            checked.cost += cost or 0.0
        held = (hold.tokens, hold.cost) if hold.held else (0.0, 0.0)
        await self._settle(hold, held, (input_tokens + output, cost or 0.0))

    async def release(self, hold: object) -> None:
        assert isinstance(hold, Hold)
        if hold.held:
            await self._settle(hold, (hold.tokens, hold.cost), (0.0, 0.0))

    async def _settle(
        self, hold: Hold, held: tuple[float, float], used: tuple[float, float]
    ) -> None:
        try:
            await self.counters.settle(hold.charge.person, hold.day, hold.month, held, used)
        except Exception as exc:  # the ledger has the call; the counters miss it
            self._unchecked(exc)

    # ------------------------------------------------------------------ turns

    async def check(self, person: str, chat: str | None = None) -> None:
        """Raise ``BudgetExhausted`` when ``person`` may start no turn now."""
        limits = self.limits_for(person, chat)
        if limits.tokens_per_day is None and limits.cost_per_month is None:
            return
        day, month = self.windows()
        try:
            spent_day, spent_month = await self.counters.read(person, day, month)
        except Exception as exc:
            self._unchecked(exc)
            return
        self._checked[person] = _Checked(day.key, month.key, spent_day.tokens, spent_month.cost)
        reached = over(spent_day, spent_month, limits)
        if reached is not None:
            logger.info("turn not started: %s reached its %s budget", person, reached)
            raise BudgetExhausted(self._refusal(reached, limits, day, month))

    async def notice(self, person: str, chat: str | None = None) -> str | None:
        """The heads-up for a person past ``budgets.notice_at`` of a limit, once a period."""
        limits = self.limits_for(person, chat)
        checked = self._checked.pop(person, None)
        if limits.tokens_per_day is None and limits.cost_per_month is None:
            return None
        day, month = self.windows()
        if checked is not None and (checked.day, checked.month) == (day.key, month.key):
            used_day, used_month = checked.tokens, checked.cost
        else:
            status = await self.status(person, chat)
            used_day, used_month = status.spent_day.tokens, status.spent_month.cost
        share_at = self._settings().budgets.notice_at
        for kind, used, limit, window in (
            ("day", used_day, limits.tokens_per_day, day),
            ("month", used_month, limits.cost_per_month, month),
        ):
            if not limit or used < share_at * limit:
                continue
            claimed = await asyncio.to_thread(
                self.ledger.claim_notice, person, window.key, self._clock()
            )
            if claimed:
                return t.warning(kind, min(1.0, used / limit), limit, window.resets_at)
        return None

    async def status(self, person: str, chat: str | None = None) -> UsageStatus:
        day, month = self.windows()
        spent_day, spent_month = await self.counters.read(person, day, month)
        return UsageStatus(
            person, day, month, spent_day, spent_month, self.limits_for(person, chat)
        )

    def _unchecked(self, exc: Exception) -> None:
        """One WARNING a minute while the counters fail (Redis down): calls go ahead."""
        now = self._clock()
        if self._warned_at is None or now - self._warned_at >= WARN_INTERVAL:
            self._warned_at = now
            logger.warning(
                "budget not checked, the call goes ahead (%s: %s)", type(exc).__name__, exc
            )

    def _refusal(self, kind: str, limits: Limits, day: Window, month: Window) -> str:
        if kind == "day":
            return t.refusal(kind, float(limits.tokens_per_day or 0), day.resets_at)
        return t.refusal(kind, float(limits.cost_per_month or 0), month.resets_at)

    # ------------------------------------------------------------------ the ledger

    async def _record(self, row: LedgerRow) -> None:
        self._pending.append(row)
        if self._write_through:
            await self.flush()
        elif self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self.flush(), name="usage-ledger")

    async def flush(self) -> None:
        """Write the calls not written yet (and purge old rows, at most hourly); the rows
        the background writer has taken are written first, so none is still on its way
        when this returns."""
        writer = self._writer
        if writer is not None and not writer.done() and writer is not asyncio.current_task():
            await asyncio.shield(writer)
        while self._pending:
            rows, self._pending = self._pending, []
            try:
                await asyncio.to_thread(self.ledger.record, rows)
            except Exception as exc:
                logger.warning("%d call(s) not written to the usage ledger (%s)", len(rows), exc)
                return
        await self.maintain()

    async def maintain(self) -> None:
        """Forget ledger rows older than ``budgets.ledger_days`` (at most once an hour)."""
        now = self._clock()
        if self._purged_at is not None and now - self._purged_at < PURGE_INTERVAL:
            return
        self._purged_at = now
        before = now - self._settings().budgets.ledger_days * DAY
        try:
            removed = await asyncio.to_thread(self.ledger.purge, before)
        except Exception as exc:
            logger.warning("old usage ledger rows not purged (%s)", exc)
            return
        forget = getattr(self.counters, "forget", None)
        if callable(forget):
            forget(now)
        if removed:
            logger.info(
                "forgot %d usage ledger row(s) older than %d days",
                removed,
                self._settings().budgets.ledger_days,
            )

    async def aclose(self) -> None:
        """Write what is pending (at shutdown) and let go of the ledger and counters."""
        if self._writer is not None:
            await asyncio.gather(self._writer, return_exceptions=True)
        await self.flush()
        closer = getattr(self.counters, "aclose", None)
        if callable(closer):
            await closer()
        await asyncio.to_thread(self.ledger.close)
        if self._on_close is not None:
            self._on_close()
            self._on_close = None

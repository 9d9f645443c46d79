"""``/usage``, ``/admin usage [PERSON]`` and ``/admin budget PERSON …``: budgets in the chat."""

from __future__ import annotations

import asyncio
import logging

from gateway.access import AdminReply
from gateway.budgets import BudgetMeter, UsageStatus, money, when
from gateway.commands._registry import CommandContext
from memory.paths import UserKey

__all__ = ["budget_sub", "usage_command", "usage_lines", "usage_sub"]

logger = logging.getLogger(__name__)

NO_BUDGETS = "Usage is not recorded in this process."
BUDGET_USAGE = "Usage: /admin budget <platform:id> tokens_per_day=N | cost_per_month=X | reset"
BUDGET_SET = "{person}: {what}. It applies from their next message."
BUDGET_RESET = "{person}: back to the configured limits."
BUDGET_NOTHING = "{person} had no limits set by an admin."
MONTH_HEADER = "This month ({month}), by person:"
MONTH_EMPTY = "No LLM calls recorded this month."


def _meter(ctx: CommandContext) -> BudgetMeter | None:
    return ctx.services.budgets


def _share(used: float, limit: float | None) -> str:
    return f" ({used / limit:.0%})" if limit else ""


def usage_lines(status: UsageStatus) -> list[str]:
    """The day and the month against the limits, as ``/usage`` shows them."""
    day, month, limits = status.spent_day, status.spent_month, status.limits
    day_limit = limits.tokens_per_day
    today = f"Today: {int(day.tokens):,} tokens"
    today += (
        f" of {day_limit:,}{_share(day.tokens, day_limit)}, resets {when(status.day.resets_at)}"
        if day_limit is not None
        else " (no daily limit)"
    )
    cost_limit = limits.cost_per_month
    this_month = f"This month: {int(month.tokens):,} tokens, cost {money(month.cost)}"
    this_month += (
        f" of {money(cost_limit)}{_share(month.cost, cost_limit)}, "
        f"resets {when(status.month.resets_at)}"
        if cost_limit is not None
        else " (no monthly limit)"
    )
    return [today, this_month]


async def usage_command(ctx: CommandContext) -> str:
    meter = _meter(ctx)
    if meter is None:
        return NO_BUDGETS
    chat = f"{ctx.msg.platform}:{ctx.msg.chat_id}"
    status = await meter.status(await _whose(ctx, str(ctx.user_key)), chat)
    return "\n".join(usage_lines(status))


async def usage_sub(ctx: CommandContext, arg: str) -> str:
    meter = _meter(ctx)
    if meter is None:
        return NO_BUDGETS
    if arg:
        person = _person(arg)
        if person is None:
            return AdminReply(BUDGET_USAGE, ok=False, outcome="usage")
        person = await _whose(ctx, person)
        return "\n".join([person, *usage_lines(await meter.status(person))])
    _, month = meter.windows()
    lines = await asyncio.to_thread(meter.ledger.report, month.start, month.end)
    if not lines:
        return MONTH_EMPTY
    rows = [MONTH_HEADER.format(month=month.key.removeprefix("month:"))]
    for line in lines[:50]:
        cost = "unpriced" if line.cost is None else money(line.cost)
        rows.append(
            f"{line.person} {line.model}: {line.calls} call(s), "
            f"{line.input_tokens + line.output_tokens:,} tokens, {cost}"
        )
    return "\n".join(rows)


async def budget_sub(ctx: CommandContext, arg: str) -> str:
    meter = _meter(ctx)
    if meter is None:
        return NO_BUDGETS
    target, _, change = arg.partition(" ")
    person = _person(target)
    change = change.strip()
    if person is None or not change:
        return AdminReply(BUDGET_USAGE, ok=False, outcome="usage")
    person = await _whose(ctx, person)
    ledger = meter.ledger
    if change == "reset":
        cleared = await asyncio.to_thread(ledger.clear_override, person)
        meter.overrides_changed()
        return (BUDGET_RESET if cleared else BUDGET_NOTHING).format(person=person)
    key, _, value = change.partition("=")
    try:
        if key == "tokens_per_day":
            tokens = int(value)
            if tokens < 0:
                raise ValueError(value)
            await asyncio.to_thread(ledger.set_override, person, tokens_per_day=tokens)
            what = f"{tokens:,} tokens a day"
        elif key == "cost_per_month":
            cost = float(value)
            if not cost >= 0:
                raise ValueError(value)
            await asyncio.to_thread(ledger.set_override, person, cost_per_month=cost)
            what = f"{money(cost)} a month"
        else:
            return AdminReply(BUDGET_USAGE, ok=False, outcome="usage")
    except ValueError:
        return AdminReply(BUDGET_USAGE, ok=False, outcome="usage")
    meter.overrides_changed()
    logger.info("budget of %s set by %s: %s", person, ctx.user_key, key)
    return BUDGET_SET.format(person=person, what=what)


def _person(text: str) -> str | None:
    try:
        return str(UserKey.parse(text.strip()))
    except ValueError:
        return None


async def _whose(ctx: CommandContext, key: str) -> str:
    """The person an account's usage and budget count under (linked accounts share one)."""
    people = ctx.services.people
    return key if people is None else await people.person_of(key)

"""Per-person budgets and the usage ledger behind them.

``BudgetMeter`` is the agent's ``UsageMeter`` (``agent.usage``): every LLM call
is held against the person's budget before it is made and written to the
ledger (``memory.usage_ledger``) after. Counters live in this process
(``LocalSpend``) or, with ``redis.url``, in Redis (``gateway.replicas.SharedSpend``).
Days and months follow ``sessions.timezone``; prices come from ``llm.pricing``.

Each name is imported on first use, so that reading the ledger does not load the
shared (redis) counters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway._lazy import lazy_names

if TYPE_CHECKING:
    from gateway.budgets._meter import BudgetMeter, Hold, UsageStatus
    from gateway.budgets._open import open_meter
    from gateway.budgets._periods import Window, windows
    from gateway.budgets._pricing import cost_of
    from gateway.budgets._spend import Base, Limits, LocalSpend, SpendCounters, Spent, over
    from gateway.budgets._texts import money, when

__all__ = [
    "Base",
    "BudgetMeter",
    "Hold",
    "Limits",
    "LocalSpend",
    "SpendCounters",
    "Spent",
    "UsageStatus",
    "Window",
    "cost_of",
    "money",
    "open_meter",
    "over",
    "when",
    "windows",
]


_HOME = {
    "BudgetMeter": ("gateway.budgets._meter", "BudgetMeter"),
    "Hold": ("gateway.budgets._meter", "Hold"),
    "UsageStatus": ("gateway.budgets._meter", "UsageStatus"),
    "open_meter": ("gateway.budgets._open", "open_meter"),
    "Window": ("gateway.budgets._periods", "Window"),
    "windows": ("gateway.budgets._periods", "windows"),
    "cost_of": ("gateway.budgets._pricing", "cost_of"),
    "Base": ("gateway.budgets._spend", "Base"),
    "Limits": ("gateway.budgets._spend", "Limits"),
    "LocalSpend": ("gateway.budgets._spend", "LocalSpend"),
    "SpendCounters": ("gateway.budgets._spend", "SpendCounters"),
    "Spent": ("gateway.budgets._spend", "Spent"),
    "over": ("gateway.budgets._spend", "over"),
    "money": ("gateway.budgets._texts", "money"),
    "when": ("gateway.budgets._texts", "when"),
}
"""Where each name of ``__all__`` is defined; imported on first use."""


__getattr__ = lazy_names(__name__, _HOME, globals())

"""Per-person budgets and the usage ledger behind them.

``BudgetMeter`` is the agent's ``UsageMeter`` (``agent.usage``): every LLM call
is held against the person's budget before it is made and written to the
ledger (``memory.usage_ledger``) after. Counters live in this process
(``LocalSpend``) or, with ``redis.url``, in Redis (``gateway.replicas.SharedSpend``).
Days and months follow ``sessions.timezone``; prices come from ``llm.pricing``.
"""

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

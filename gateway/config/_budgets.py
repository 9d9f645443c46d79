"""The ``budgets`` section: what each person may spend, and how long the ledger keeps calls."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from memory.settings import LIVE

__all__ = ["BudgetLimits", "BudgetSettings"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BudgetLimits(_Section):
    """Limits of one role, person or chat; None: no limit of that kind."""

    tokens_per_day: Annotated[int | None, LIVE] = Field(
        None, ge=0, description="Input + output tokens a day."
    )
    cost_per_month: Annotated[float | None, LIVE] = Field(
        None, ge=0, description="Cost a calendar month, in the currency of ``llm.pricing``."
    )


class BudgetSettings(_Section):
    """The ``budgets`` section. Days and months follow ``sessions.timezone``.

    A person's limits: their own (``people``, or set with ``/admin budget``),
    else those of the group chat the turn is in (``chats``), else their role's
    (``admin`` or ``user``).
    """

    ledger_days: Annotated[int, LIVE] = Field(
        400, gt=0, description="Days the usage ledger keeps each call."
    )
    notice_at: Annotated[float, LIVE] = Field(
        0.8, gt=0, le=1, description="Share of a limit at which the person is told, once."
    )
    user: BudgetLimits = Field(default_factory=BudgetLimits)
    admin: BudgetLimits = Field(default_factory=BudgetLimits)
    people: Annotated[dict[str, BudgetLimits], LIVE] = Field(
        default_factory=dict, description="platform:id -> limits of that person."
    )
    chats: Annotated[dict[str, BudgetLimits], LIVE] = Field(
        default_factory=dict, description="platform:chat_id -> limits of turns in that chat."
    )

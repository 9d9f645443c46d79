"""What people and operators are told about budgets, in one place."""

from __future__ import annotations

from datetime import datetime

__all__ = ["money", "refusal", "warning", "when"]

REFUSED_DAY = (
    "You have used today's {limit} tokens, so I can't answer now. Your budget resets {when}."
)
REFUSED_MONTH = (
    "You have used this month's budget ({limit}), so I can't answer now. Your budget resets {when}."
)
WARNED_DAY = "Heads-up: you have used {share:.0%} of today's {limit} tokens (resets {when})."
WARNED_MONTH = (
    "Heads-up: you have used {share:.0%} of this month's budget of {limit} (resets {when})."
)


def money(amount: float) -> str:
    return f"{amount:,.2f}" if amount >= 0.01 or amount == 0 else f"{amount:.4f}"


def when(at: datetime) -> str:
    """``on 2026-12-03 at 00:00 UTC``."""
    return f"on {at:%Y-%m-%d} at {at:%H:%M} {at.tzname() or ''}".rstrip()


def refusal(kind: str, limit: float, resets: datetime) -> str:
    if kind == "day":
        return REFUSED_DAY.format(limit=f"{int(limit):,}", when=when(resets))
    return REFUSED_MONTH.format(limit=money(limit), when=when(resets))


def warning(kind: str, share: float, limit: float, resets: datetime) -> str:
    if kind == "day":
        return WARNED_DAY.format(share=share, limit=f"{int(limit):,}", when=when(resets))
    return WARNED_MONTH.format(share=share, limit=money(limit), when=when(resets))

"""Meters built from settings: the gateway's, and one per job thread's event loop."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from gateway.budgets._meter import BudgetMeter
from gateway.budgets._periods import Window
from gateway.budgets._shared import RedisSpend
from gateway.budgets._spend import LocalSpend, SpendCounters
from gateway.config import Settings
from gateway.replicas import open_shared_spend
from memory.database import Location, safe_location
from memory.usage_ledger import UsageLedger

__all__ = ["open_meter"]

_local: dict[str, LocalSpend] = {}
_local_lock = threading.Lock()


def _counters(settings: Settings, ledger: UsageLedger) -> SpendCounters:
    def base(person: str, window: Window) -> tuple[int, float]:
        return ledger.totals(person, window.start, window.end)

    if settings.redis.url is not None:
        return RedisSpend(open_shared_spend(settings.redis.url.get_secret_value()), base)
    # one process's counters, shared by its event loop and its job threads
    with _local_lock:
        key = safe_location(ledger.location)
        found = _local.get(key)
        if found is None:
            found = _local[key] = LocalSpend(base)
        return found


def open_meter(
    settings: Callable[[], Settings],
    where: Location,
    *,
    is_admin: Callable[[str], bool],
    clock: Callable[[], float] = time.time,
    write_through: bool = False,
) -> BudgetMeter:
    """A meter over the ledger at ``where`` (opened here; ``BudgetMeter.aclose`` closes it)."""
    ledger = UsageLedger(where)
    return BudgetMeter(
        settings,
        ledger,
        _counters(settings(), ledger),
        is_admin=is_admin,
        clock=clock,
        write_through=write_through,
    )

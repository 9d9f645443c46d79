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

_local: dict[str, tuple[LocalSpend, int]] = {}
"""Location of the ledger -> this process's counters and the meters open on them."""
_local_lock = threading.Lock()


def _ledger_totals(where: Location) -> Callable[[str, Window], tuple[int, float]]:
    def base(person: str, window: Window) -> tuple[int, float]:
        with UsageLedger(where) as ledger:  # the process's shared connection or pool
            return ledger.totals(person, window.start, window.end)

    return base


def _counters(
    settings: Settings, where: Location, *, defer_settles: bool
) -> tuple[SpendCounters, Callable[[], None]]:
    """The counters, and what to call when the meter using them closes."""
    base = _ledger_totals(where)
    if settings.redis.url is not None:
        shared = open_shared_spend(settings.redis.url.get_secret_value())
        return RedisSpend(shared, base, defer_settles=defer_settles), _nothing
    # one process's counters, shared by its event loop and its job threads while a meter
    # is open on them; a process that opens its stack again starts them from the ledger
    key = safe_location(where)
    with _local_lock:
        found, users = _local.get(key, (LocalSpend(base), 0))
        _local[key] = (found, users + 1)

    def release() -> None:
        with _local_lock:
            spend, left = _local.get(key, (found, 1))
            if left <= 1:
                _local.pop(key, None)
            else:
                _local[key] = (spend, left - 1)

    return found, release


def _nothing() -> None:
    return None


def open_meter(
    settings: Callable[[], Settings],
    where: Location,
    *,
    is_admin: Callable[[str], bool],
    clock: Callable[[], float] = time.time,
    write_through: bool = False,
) -> BudgetMeter:
    """A meter over the ledger at ``where`` (opened here; ``BudgetMeter.aclose`` closes it)."""
    counters, release = _counters(settings(), where, defer_settles=not write_through)
    return BudgetMeter(
        settings,
        UsageLedger(where),
        counters,
        is_admin=is_admin,
        clock=clock,
        write_through=write_through,
        on_close=release,
    )

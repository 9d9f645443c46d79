"""The usage ledger on SQLite and PostgreSQL, its purge, and the meter's calendar."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from agent.errors import BudgetExhausted
from agent.usage import Charge
from gateway.budgets import BudgetMeter, LocalSpend, windows
from gateway.config import load_settings
from memory.usage_ledger import LedgerRow, UsageLedger

pytest_plugins = ["tests.fakes.postgres_fixtures"]

DAY = 86_400.0


def _row(at: float, person: str = "telegram:1", tokens: int = 100) -> LedgerRow:
    return LedgerRow(at, person, "s1", "turn", "m", tokens, 10, 50, False, 0.5)


@pytest.fixture(params=["sqlite", "postgres"])
def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> UsageLedger:
    if request.param == "sqlite":
        return UsageLedger(tmp_path / "state.db")
    url = request.getfixturevalue("postgres_url")
    return UsageLedger(url)


def test_rows_totals_report_purge_notices_and_overrides(ledger: UsageLedger) -> None:
    with ledger:
        ledger.record([_row(1_000.0), _row(2_000.0), _row(2_500.0, "telegram:2", 7)])
        assert ledger.totals("telegram:1", 1_500.0) == (150, 0.5)
        assert ledger.totals("telegram:1", 0.0, 1_500.0) == (150, 0.5)
        [one, two] = ledger.report(0.0, 3_000.0)
        assert (one.person, one.calls, one.input_tokens, one.cached_tokens) == (
            "telegram:1",
            2,
            200,
            20,
        )
        assert (two.person, two.output_tokens, two.cost) == ("telegram:2", 50, 0.5)
        assert ledger.purge(1_500.0) == 1
        assert [r.at for r in ledger.rows("telegram:1")] == [2_000.0]
        assert ledger.claim_notice("telegram:1", "day:2026-12-02", 2_000.0)
        assert not ledger.claim_notice("telegram:1", "day:2026-12-02", 2_001.0)
        ledger.set_override("telegram:1", tokens_per_day=10)
        ledger.set_override("telegram:1", cost_per_month=2.5)
        override = ledger.override("telegram:1")
        assert override is not None
        assert (override.tokens_per_day, override.cost_per_month) == (10, 2.5)
        assert ledger.clear_override("telegram:1") and ledger.override("telegram:1") is None


def test_days_and_months_follow_the_time_zone() -> None:
    zone = "America/New_York"
    at = datetime(2026, 3, 31, 23, 30, tzinfo=ZoneInfo(zone)).timestamp()
    day, month = windows(at, zone)
    assert day.key == "day:2026-03-31" and month.key == "month:2026-03"
    assert day.resets_at == datetime(2026, 4, 1, tzinfo=ZoneInfo(zone))
    assert month.resets_at == datetime(2026, 4, 1, tzinfo=ZoneInfo(zone))
    day_in_utc, _ = windows(at, "UTC")  # 03:30 on April 1st in UTC
    assert day_in_utc.key == "day:2026-04-01"


def test_the_windows_move_on_at_midnight_and_at_the_month_end() -> None:
    """``windows`` answers the calls of one day from the day it found last; the moment a
    day ends (or a clock goes back) it finds the new one, month and all."""
    zone = "Europe/Berlin"
    tz = ZoneInfo(zone)
    moments = [
        datetime(2026, 10, 24, 23, 59, 59, tzinfo=tz),
        datetime(2026, 10, 25, 0, 0, 0, tzinfo=tz),  # a day of 25 hours (clocks go back)
        datetime(2026, 10, 25, 23, 59, 59, tzinfo=tz),
        datetime(2026, 10, 31, 23, 59, 59, tzinfo=tz),
        datetime(2026, 11, 1, 0, 0, 0, tzinfo=tz),
        datetime(2026, 10, 31, 12, 0, 0, tzinfo=tz),  # the clock went back a day
    ]
    seen = [windows(m.timestamp(), zone) for m in moments]
    keys = [(day.key, month.key) for day, month in seen]
    assert keys == [
        ("day:2026-10-24", "month:2026-10"),
        ("day:2026-10-25", "month:2026-10"),
        ("day:2026-10-25", "month:2026-10"),
        ("day:2026-10-31", "month:2026-10"),
        ("day:2026-11-01", "month:2026-11"),
        ("day:2026-10-31", "month:2026-10"),
    ]
    assert seen[2][0].end - seen[2][0].start == 25 * 3600
    assert seen[4][1].start == datetime(2026, 11, 1, tzinfo=tz).timestamp()


async def test_old_rows_are_purged_by_the_meter_and_background_calls_are_never_refused(
    tmp_path: Path,
) -> None:
    now = [100 * DAY]
    settings = load_settings(
        tmp_path,
        {"CHORUS_BUDGETS__LEDGER_DAYS": "30", "CHORUS_BUDGETS__USER__TOKENS_PER_DAY": "100"},
    )
    ledger = UsageLedger(tmp_path / "state.db")
    ledger.record([_row(now[0] - 31 * DAY), _row(now[0] - 29 * DAY)])
    meter = BudgetMeter(
        lambda: settings,
        ledger,
        LocalSpend(lambda p, w: ledger.totals(p, w.start, w.end)),
        is_admin=lambda _: False,
        clock=lambda: now[0],
    )
    await meter.maintain()
    assert [r.at for r in ledger.rows()] == [now[0] - 29 * DAY]

    turn = Charge("telegram:1", "s1", "turn")
    hold = await meter.reserve(turn, "m", 80)
    await meter.settle(hold, "m", (90, 0, 20), estimated=False)  # 110 >= 100: spent
    with pytest.raises(BudgetExhausted):
        await meter.reserve(turn, "m", 80)
    flush = await meter.reserve(turn.as_("flush"), "m", 80)  # background: counted, not refused
    await meter.settle(flush, "m", (5, 0, 5), estimated=True)
    await meter.aclose()
    with UsageLedger(tmp_path / "state.db") as reopened:
        purposes = [(r.purpose, r.estimated) for r in reopened.rows(since=now[0] - DAY)]
    assert purposes == [("turn", False), ("flush", True)]


def test_limits_come_from_the_person_then_the_chat_then_the_role(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.yaml").write_text(
        "budgets:\n"
        "  user: {tokens_per_day: 100, cost_per_month: 1}\n"
        "  admin: {tokens_per_day: 1000}\n"
        "  people: {'telegram:5': {tokens_per_day: 5}}\n"
        "  chats: {'telegram:-100': {tokens_per_day: 50}}\n"
    )
    settings = load_settings(home, {})
    ledger = UsageLedger(home / "state.db")
    meter = BudgetMeter(
        lambda: settings,
        ledger,
        LocalSpend(lambda p, w: ledger.totals(p, w.start, w.end)),
        is_admin=lambda key: key == "telegram:1",
    )
    assert meter.limits_for("telegram:2").tokens_per_day == 100
    assert meter.limits_for("telegram:2").cost_per_month == 1
    assert meter.limits_for("telegram:1").tokens_per_day == 1000
    assert meter.limits_for("telegram:1").cost_per_month is None
    assert meter.limits_for("telegram:2", "telegram:-100").tokens_per_day == 50
    assert meter.limits_for("telegram:5", "telegram:-100").tokens_per_day == 5
    ledger.set_override("telegram:5", cost_per_month=3.0)  # an admin's: wins for its kind
    meter.overrides_changed()
    limits = meter.limits_for("telegram:5", "telegram:-100")
    assert (limits.tokens_per_day, limits.cost_per_month) == (5, 3.0)
    ledger.close()

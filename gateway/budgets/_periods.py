"""The calendar of budgets: a person's day and month in ``sessions.timezone``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

__all__ = ["Window", "windows"]


@dataclass(frozen=True)
class Window:
    """One day or one month: ``key`` names it (``day:2026-12-02``, ``month:2026-12``)."""

    key: str
    start: float
    end: float
    zone: str

    @property
    def resets_at(self) -> datetime:
        return datetime.fromtimestamp(self.end, ZoneInfo(self.zone))


_last: dict[str, tuple[Window, Window]] = {}
"""The windows each zone was last asked for: every call of a day is answered from here."""


def windows(now: float, zone: str) -> tuple[Window, Window]:
    """The day and the month ``now`` falls in, in time zone ``zone``."""
    known = _last.get(zone)
    if known is not None and known[0].start <= now < known[0].end:
        return known
    found = _windows(now, zone)
    _last[zone] = found
    return found


def _windows(now: float, zone: str) -> tuple[Window, Window]:
    tz = ZoneInfo(zone)
    local = datetime.fromtimestamp(now, tz)
    day_start = datetime(local.year, local.month, local.day, tzinfo=tz)
    day_end = _local_midnight(day_start + timedelta(days=1, hours=2), tz)
    month_start = datetime(local.year, local.month, 1, tzinfo=tz)
    year, month = (local.year + 1, 1) if local.month == 12 else (local.year, local.month + 1)
    month_end = datetime(year, month, 1, tzinfo=tz)
    return (
        Window(f"day:{local:%Y-%m-%d}", day_start.timestamp(), day_end.timestamp(), zone),
        Window(f"month:{local:%Y-%m}", month_start.timestamp(), month_end.timestamp(), zone),
    )


def _local_midnight(moment: datetime, tz: ZoneInfo) -> datetime:
    """Midnight (local) of the day ``moment`` is in (days of 23 or 25 hours included)."""
    return datetime(moment.year, moment.month, moment.day, tzinfo=tz)

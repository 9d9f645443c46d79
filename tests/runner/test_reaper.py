"""The reaper: the newest deadline of a key counts; its heap stays in proportion to the keys."""

from __future__ import annotations

from gateway.sessions._expiry import COMPACT_SLACK, Reaper
from tests.fakes.clock import FakeClock


async def test_rescheduling_many_times_keeps_the_heap_small_and_the_newest_deadline() -> None:
    clock = FakeClock(1000.0)
    expired: list[str] = []

    async def expire(key: str) -> None:
        expired.append(key)

    reaper = Reaper(clock, expire)
    for turn in range(2_000):  # every turn of 10 sessions moves its deadline on
        for n in range(10):
            reaper.schedule(f"s{n}", 1000.0 + 60 + turn + n)
    assert len(reaper) == 10
    assert len(reaper._heap) <= 2 * 10 + COMPACT_SLACK + 1
    reaper.schedule("s0", 1000.0 + 30)  # one moves earlier
    await clock.advance(31)
    await reaper.run_due()
    assert expired == ["s0"]
    await clock.advance(60 + 1999 + 10 - 31)
    await reaper.run_due()
    assert sorted(expired) == sorted(f"s{n}" for n in range(10))  # each once
    assert len(reaper) == 0

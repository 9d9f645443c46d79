"""Per-user message limits and the once-per-interval notice throttle."""

from __future__ import annotations

import pytest

from gateway.access import NoticeThrottle, RateDecision, RateLimiter
from tests.fakes.clock import FakeClock


def refused(decision: RateDecision) -> tuple[bool, float | None]:
    """A refusal's (notify, retry_after)."""
    assert not decision.allowed
    return decision.notify, decision.retry_after


def test_allows_per_minute_then_refuses_and_notifies_once() -> None:
    limiter = RateLimiter(20, FakeClock())
    assert all(limiter.check("telegram:1").allowed for _ in range(20))
    assert refused(limiter.check("telegram:1")) == (True, pytest.approx(3.0))
    assert refused(limiter.check("telegram:1")) == (False, pytest.approx(3.0))
    assert refused(limiter.check("telegram:1")) == (False, pytest.approx(3.0))


async def test_refills_with_time_and_a_new_run_notifies_again() -> None:
    clock = FakeClock()
    limiter = RateLimiter(20, clock)
    for _ in range(21):
        limiter.check("telegram:1")
    await clock.advance(3.0)  # 20 per minute: one token every 3 seconds
    assert limiter.check("telegram:1") == RateDecision(allowed=True)
    assert refused(limiter.check("telegram:1")) == (True, pytest.approx(3.0))
    await clock.advance(1.0)  # a third of the next message is back: 2 seconds to go
    assert refused(limiter.check("telegram:1")) == (False, pytest.approx(2.0))
    await clock.advance(60.0)
    assert all(limiter.check("telegram:1").allowed for _ in range(20))
    assert not limiter.check("telegram:1").allowed


def test_zero_means_unlimited() -> None:
    limiter = RateLimiter(0, FakeClock())
    assert all(limiter.check("telegram:1") == RateDecision(True) for _ in range(1000))
    assert len(limiter) == 0


def test_users_are_independent() -> None:
    limiter = RateLimiter(2, FakeClock())
    assert limiter.check("telegram:1").allowed
    assert limiter.check("telegram:1").allowed
    assert not limiter.check("telegram:1").allowed
    assert limiter.check("telegram:2").allowed
    assert limiter.check("discord:1").allowed


async def test_memory_is_bounded() -> None:
    clock = FakeClock()
    limiter = RateLimiter(5, clock, max_keys=10)
    for n in range(25):
        limiter.check(f"telegram:{n}")
    assert len(limiter) == 10
    await clock.advance(61.0)  # every bucket is full again: nothing worth keeping
    limiter.check("telegram:new")
    assert len(limiter) == 1


def test_reconfigure_applies_a_new_limit() -> None:
    limiter = RateLimiter(5, FakeClock())
    limiter.reconfigure(1)
    assert limiter.check("telegram:1").allowed
    assert not limiter.check("telegram:1").allowed
    limiter.reconfigure(0)
    assert limiter.check("telegram:1").allowed
    with pytest.raises(ValueError):
        limiter.reconfigure(-1)


async def test_notice_throttle_once_per_interval() -> None:
    clock = FakeClock()
    throttle = NoticeThrottle(3600, clock, max_keys=3)
    assert throttle.allow("a")
    assert not throttle.allow("a")
    assert throttle.allow("b")
    await clock.advance(3599)
    assert not throttle.allow("a")
    await clock.advance(1)
    assert throttle.allow("a")
    for key in "cdefg":
        throttle.allow(key)
    assert len(throttle) <= 3

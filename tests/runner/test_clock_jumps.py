"""The wall clock set forward or back: deadlines follow it, intervals do not."""

from __future__ import annotations

import asyncio

from gateway.access._ratelimit import NoticeThrottle, RateLimiter
from gateway.adapters import AdapterCapabilities, ReplyStream, TestChatAdapter
from gateway.adapters._support import RecentValues, SeenSet, Sometimes
from gateway.sessions._expiry import MAX_NAP
from tests.fakes import FakeClock, FakeOpenAI
from tests.runner.conftest import GatewayFactory


async def test_a_clock_set_two_hours_forward_ends_idle_sessions_without_a_message(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    """The reaper sleeps towards a wall-clock deadline; a jump must not leave it asleep."""
    gw = await make_gateway(CHORUS_SESSIONS__IDLE_MINUTES="60")
    server.reply("hi!")
    await gw.ask("hello", user="2")
    session = gw.runner.sessions.sessions[0].session_id
    await gw.settle()
    await gw.clock.advance(1)  # the reaper is asleep towards the deadline an hour ahead

    gw.clock.jump(2 * 3600)  # nothing that sleeps notices this by itself
    await gw.clock.advance(MAX_NAP)
    await gw.settle()

    record = gw.stack.db.db.get_session(session)
    assert record is not None and record.end_reason == "idle"
    assert gw.runner.sessions.sessions == []


def test_a_clock_set_back_an_hour_does_not_silence_refusal_notices() -> None:
    clock = FakeClock(1_000_000.0)
    throttle = NoticeThrottle(600, clock)
    assert throttle.allow("telegram:9")
    clock.jump(-3600)
    clock.set(clock.time() + 601)  # ten minutes pass on every clock
    assert throttle.allow("telegram:9")


def test_a_clock_set_back_an_hour_neither_empties_nor_fills_a_rate_bucket() -> None:
    clock = FakeClock(1_000_000.0)
    limiter = RateLimiter(6, clock)  # one message every ten seconds after a burst of six
    assert all(limiter.check("telegram:9").allowed for _ in range(6))
    assert not limiter.check("telegram:9").allowed
    clock.jump(-3600)
    clock.set(clock.time() + 10)
    assert limiter.check("telegram:9").allowed
    assert not limiter.check("telegram:9").allowed
    clock.jump(3600)  # and forward again: no free hour of tokens either
    assert not limiter.check("telegram:9").allowed


async def test_a_clock_set_back_an_hour_neither_stops_streaming_nor_holds_the_final_edit() -> None:
    """Streaming into a message on a platform whose edits are spaced (one a second):
    the wall clock set back an hour between two edits changes neither the spacing
    nor when the finished answer lands (before: no edit for an hour)."""
    clock = FakeClock()
    adapter = TestChatAdapter(
        capabilities=AdapterCapabilities(max_text_length=4000, edits=True, min_edit_interval=1.0)
    )
    stream = ReplyStream(
        adapter,
        platform="testchat",
        chat_id="c1",
        thread_id=None,
        reply_to="m1",
        clock=clock,
        streaming=True,
    )

    async def pushed(delta: str) -> None:
        await clock.advance(1.1)
        await stream.push(delta)
        for _ in range(5):
            await asyncio.sleep(0)

    await pushed("The answer ")
    assert adapter.texts() == ["The answer"]
    clock.jump(-3600)
    await pushed("is forty")
    assert adapter.texts() == ["The answer is forty"]

    finishing = asyncio.ensure_future(stream.finish("The answer is forty-two."))
    for _ in range(3):
        await clock.advance(0.5)
    assert finishing.done()
    assert adapter.texts() == ["The answer is forty-two."]


def test_a_clock_set_back_an_hour_neither_silences_a_repeated_log_line_nor_keeps_old_entries() -> (
    None
):
    """What is kept or held back for an interval (a log line once a minute, a redelivery
    remembered, a looked-up value cached) counts the time that passed, not the wall clock."""
    clock = FakeClock()
    once_a_minute = Sometimes(60.0, clock)
    seen = SeenSet(10, ttl=60.0, clock=clock)
    cached: RecentValues[str] = RecentValues(10, ttl=60.0, clock=clock)
    assert once_a_minute.due()
    assert seen.add("update 1")
    cached.put("U1", "Ann")

    clock.jump(-3600)
    clock.set(clock.time() + 61)  # a minute passes on every clock
    assert once_a_minute.due()
    assert seen.add("update 1")
    assert cached.get("U1") is None

    cached.put("U1", "Ann")
    assert seen.add("update 2")
    clock.jump(2 * 3600)  # and forward: nothing is forgotten before its time
    assert not seen.add("update 2")
    assert cached.get("U1") == "Ann"
    assert not once_a_minute.due()

"""The helpers every adapter shares: lanes, backoff on an injected clock, the seen set."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from gateway.adapters import Backoff, ChatLanes, SeenSet, retrying
from tests.fakes import FakeClock


async def test_backoff_grows_to_its_cap_on_the_given_clock() -> None:
    clock = FakeClock(0)
    backoff = Backoff(first=1, factor=3, cap=5, sleep=clock.sleep)
    waited = []
    for _ in range(4):
        task = asyncio.create_task(backoff.wait())
        await asyncio.sleep(0)
        waited.append(backoff.delay)
        await clock.advance(10)
        await task
    assert waited == [3, 5, 5, 5]
    assert clock.time() == 40
    backoff.reset()
    assert backoff.delay == 1


async def test_retrying_retries_what_it_may_and_gives_up_on_the_rest() -> None:
    calls: list[int] = []
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("down")
        return "ok"

    result = await retrying(
        flaky, attempts=5, retry_on=(ConnectionError,), backoff=Backoff(first=2, sleep=sleep)
    )
    assert result == "ok" and len(calls) == 3 and slept == [2, 4]

    class Fatal(ConnectionError):
        pass

    async def fatal() -> str:
        raise Fatal("no")

    with pytest.raises(Fatal):
        await retrying(
            fatal,
            attempts=5,
            retry_on=(ConnectionError,),
            give_up_on=(Fatal,),
            backoff=Backoff(sleep=sleep),
        )
    assert slept == [2, 4]

    async def always_down() -> str:
        raise ConnectionError("down")

    with pytest.raises(ConnectionError):
        await retrying(
            always_down, attempts=2, retry_on=(ConnectionError,), backoff=Backoff(sleep=sleep)
        )


def test_seen_set_is_bounded_and_forgets_after_its_ttl() -> None:
    clock = FakeClock(0)
    seen = SeenSet(2, ttl=10, clock=clock)
    assert seen.add("a") and seen.add("b")
    assert not seen.add("a")
    assert seen.add("c") and len(seen) == 2
    assert seen.add("a")  # pushed out by the capacity
    clock.set(20)
    assert seen.add("c")  # forgotten after the ttl


async def test_lanes_keep_order_per_chat_and_survive_a_failure() -> None:
    done: list[str] = []

    def job(name: str) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            if name == "boom":
                raise RuntimeError("boom")
            done.append(name)

        return run

    lanes = ChatLanes("test")
    for name in ("a1", "boom", "a2"):
        lanes.submit("a", job(name))
    lanes.submit("b", job("b1"))
    assert await lanes.drain(5) == 0
    assert [n for n in done if n.startswith("a")] == ["a1", "a2"] and "b1" in done
    assert len(lanes) == 0

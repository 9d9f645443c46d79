"""Shared dedupe, rate limits, send budgets, registry and poller lock on a real Redis.

Each test plays two or more replicas: separate objects (and clients) on one
redis-server. Time-dependent behaviour runs on a ``FakeClock`` passed to the
scripts as ``now``; the few real expiries are bounded polls, never sleeps that
assert timing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

import pytest
from redis.asyncio import Redis

from gateway.replicas import (
    Budget,
    PollerLock,
    ReplicaError,
    ReplicaRegistry,
    SharedBudget,
    SharedRateDecision,
    SharedRateLimiter,
    SharedSeen,
)
from tests.fakes.clock import FakeClock
from tests.waiting import until

if TYPE_CHECKING:
    from tests.fakes.redis_server import RedisServer

pytest_plugins = ["tests.fakes.redis_fixtures"]


@pytest.fixture
async def clients(redis_server: RedisServer) -> AsyncIterator[tuple[Redis, Redis]]:
    """Two clients on one server: one per simulated replica."""
    first = Redis.from_url(redis_server.url, socket_timeout=5)
    second = Redis.from_url(redis_server.url, socket_timeout=5, decode_responses=True)
    yield first, second
    await first.aclose()
    await second.aclose()


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = 5.0) -> None:
    await until(check, timeout, poll=0.02)


async def test_a_retry_reaching_another_replica_is_seen_once(
    clients: tuple[Redis, Redis],
) -> None:
    replicas = [SharedSeen(clients[0]), SharedSeen(clients[1])]
    results = await asyncio.gather(
        *(replicas[n % 2].seen("telegram", "42", "1001") for n in range(20))
    )
    assert sorted(results) == [False] + [True] * 19
    assert await replicas[1].seen("telegram", "42", "1002") is False
    assert await replicas[0].seen("telegram", "43", "1001") is False
    assert await replicas[0].seen("slack", "42", "1001") is False


async def test_seen_keys_of_different_parts_never_collide(clients: tuple[Redis, Redis]) -> None:
    seen = SharedSeen(clients[0])
    assert await seen.seen("slack", "a:b", "c") is False
    assert await seen.seen("slack", "a", "b:c") is False
    assert await seen.seen("slack", "a:b", "c") is True


async def test_seen_ids_expire_after_ttl(clients: tuple[Redis, Redis]) -> None:
    seen = SharedSeen(clients[0], ttl=0.2)
    assert await seen.seen("discord", "1", "2") is False

    async def forgotten() -> bool:
        return not await clients[0].exists("chorus:seen:discord:1:2")

    await eventually(forgotten)
    assert await seen.seen("discord", "1", "2") is False


async def test_rate_limit_counts_every_replica_and_notifies_once_per_run(
    clients: tuple[Redis, Redis],
) -> None:
    clock = FakeClock()
    first = SharedRateLimiter(clients[0], 3, clock=clock)
    second = SharedRateLimiter(clients[1], 3, clock=clock)
    allowed = SharedRateDecision(allowed=True)
    assert [await first.check("u"), await second.check("u"), await first.check("u")] == [
        allowed
    ] * 3
    assert await second.check("u") == SharedRateDecision(allowed=False, notify=True)
    assert await first.check("u") == SharedRateDecision(allowed=False, notify=False)
    assert await first.check("other") == allowed
    await clock.advance(20)  # 3 per minute: one token back
    assert await second.check("u") == allowed
    assert await first.check("u") == SharedRateDecision(allowed=False, notify=True)


async def test_rate_limit_zero_allows_everything_and_reconfigure_applies(
    clients: tuple[Redis, Redis],
) -> None:
    clock = FakeClock()
    limiter = SharedRateLimiter(clients[0], 0, clock=clock)
    assert all([(await limiter.check("u")).allowed for _ in range(100)])
    limiter.reconfigure(1)
    assert limiter.per_minute == 1
    assert (await limiter.check("u")).allowed
    assert not (await limiter.check("u")).allowed
    with pytest.raises(ValueError):
        limiter.reconfigure(-1)


async def test_two_replicas_never_exceed_a_shared_budget(clients: tuple[Redis, Redis]) -> None:
    clock = FakeClock()
    replicas = [SharedBudget(clients[0], clock=clock), SharedBudget(clients[1], clock=clock)]
    rate, burst, step, steps = 1.0, 3.0, 0.25, 40
    granted = 0
    for n in range(steps):
        for replica in replicas * 3:  # each replica tries 3 times per step
            if await replica.reserve("chat:1", rate, burst) == 0.0:
                granted += 1
        if n < steps - 1:
            await clock.advance(step)
    elapsed = step * (steps - 1)
    assert granted == int(burst + rate * elapsed)


async def test_a_refused_reserve_says_how_long_and_takes_nothing(
    clients: tuple[Redis, Redis],
) -> None:
    clock = FakeClock()
    budget = SharedBudget(clients[0], clock=clock)
    group = (20 / 60, 5.0)
    assert [await budget.reserve("group", *group) for _ in range(5)] == [0.0] * 5
    wait = await budget.reserve("group", *group)
    assert wait == pytest.approx(3.0)
    assert await budget.reserve("group", *group) == pytest.approx(3.0)  # nothing was taken
    await clock.advance(wait)
    assert await budget.reserve("group", *group) == 0.0
    assert await budget.reserve("group", *group) > 0.0


async def test_reserve_many_spends_from_all_buckets_or_none(clients: tuple[Redis, Redis]) -> None:
    clock = FakeClock()
    budget = SharedBudget(clients[0], clock=clock)
    everyone = Budget("global", 1.0, 1.0)
    chat_a, chat_b = Budget("a", 1.0, 3.0), Budget("b", 1.0, 3.0)
    assert await budget.reserve_many([chat_a, everyone]) == 0.0
    assert await budget.reserve_many([chat_b, everyone]) == pytest.approx(1.0)
    state = await budget.peek([chat_b])
    assert state.wait == 0.0
    assert state.tokens == pytest.approx(3.0)  # b was not spent


async def test_a_flood_block_stops_every_replica_until_it_ends(
    clients: tuple[Redis, Redis],
) -> None:
    clock = FakeClock()
    first, second = SharedBudget(clients[0], clock=clock), SharedBudget(clients[1], clock=clock)
    assert await first.blocked_for("chat") == 0.0
    await first.block("chat", 5.0)
    await second.block("chat", 1.0)  # a shorter block does not shorten it
    assert await second.blocked_for("chat") == pytest.approx(5.0)
    assert await second.reserve("chat", 1.0, 3.0) == pytest.approx(5.0)
    await clock.advance(5.0)
    assert await second.blocked_for("chat") == 0.0
    assert await first.reserve("chat", 1.0, 3.0) == 0.0


async def test_registry_sees_replicas_whose_heartbeat_runs(clients: tuple[Redis, Redis]) -> None:
    clock = FakeClock()
    one = ReplicaRegistry(clients[0], "r1", ttl=15, clock=clock)
    two = ReplicaRegistry(clients[1], "r2", ttl=15, clock=clock)
    await one.heartbeat()
    await two.heartbeat()
    assert await one.alive() == {"r1", "r2"}
    await clock.advance(10)
    await two.heartbeat()
    await clock.advance(10)
    assert await one.alive() == {"r2"}
    assert not await two.is_alive("r1")
    assert await one.is_alive("r2")
    await two.heartbeat()
    assert await clients[0].zcard("chorus:replicas") == 1  # the beat dropped dead r1
    await two.leave()
    assert await one.alive() == set()


async def test_a_replica_is_stopped_only_once_the_registry_saw_it_go(
    clients: tuple[Redis, Redis],
) -> None:
    clock = FakeClock()
    one = ReplicaRegistry(clients[0], "r1", ttl=15, clock=clock)
    two = ReplicaRegistry(clients[1], "r2", ttl=15, clock=clock)
    await one.heartbeat()
    await two.heartbeat()
    assert not await one.stopped("r2")
    await clock.advance(20)
    await one.heartbeat()
    assert await one.stopped("r2")  # its heartbeat ran out
    await one.forget("r2")  # its mailbox was claimed: it stays stopped, no longer "dead"
    assert await one.stopped("r2") and await one.dead() == set()
    await two.heartbeat()  # it came back
    assert not await one.stopped("r2")
    await clients[0].flushall()  # Redis restarted empty: nobody is known
    assert not await one.stopped("r2")
    await two.leave()
    assert not await one.stopped("r2")  # left, but never seen since the wipe
    await two.heartbeat()
    await two.leave()
    assert await one.stopped("r2")


async def test_a_second_poller_on_the_same_bot_is_refused(clients: tuple[Redis, Redis]) -> None:
    first = PollerLock(clients[0], "bot-hash", "r1", 30)
    second = PollerLock(clients[1], "bot-hash", "r2", 30)
    same_id = PollerLock(clients[1], "bot-hash", "r1", 30)  # another process, same id
    assert await first.acquire()
    assert not await second.acquire()
    assert not await same_id.acquire()
    assert await first.acquire()  # the holder may ask again
    assert await second.holder() == "r1"
    assert not await second.renew()
    await second.release()  # not the holder's: nothing happens
    assert await first.renew()
    await first.release()
    assert await second.acquire()
    assert not await first.renew()
    assert await PollerLock(clients[0], "other-bot", "r1").acquire()


async def test_an_expired_poller_lock_is_taken_and_the_old_holder_learns_it(
    clients: tuple[Redis, Redis],
) -> None:
    first = PollerLock(clients[0], "bot", "r1", 0.3)
    second = PollerLock(clients[1], "bot", "r2", 30)
    assert await first.acquire()
    await eventually(second.acquire)
    assert not await first.renew()
    assert await second.holder() == "r2"


async def test_unreachable_redis_is_a_replica_error(redis_server: RedisServer) -> None:
    url = f"redis://:s3cret-pass@127.0.0.1:{redis_server.port}/0"
    client = Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
    clock = FakeClock()
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: SharedSeen(client).seen("telegram", "1", "2"),
        lambda: SharedRateLimiter(client, 5, clock=clock).check("u"),
        lambda: SharedBudget(client).reserve("chat", 1.0, 3.0),
        lambda: SharedBudget(client).block("chat", 3.0),
        lambda: ReplicaRegistry(client, "r1").heartbeat(),
        lambda: PollerLock(client, "bot", "r1").acquire(),
    ]
    redis_server.stop()
    try:
        for call in calls:
            with pytest.raises(ReplicaError, match="unreachable") as caught:
                await call()
            assert "s3cret" not in str(caught.value)
    finally:
        await client.aclose()

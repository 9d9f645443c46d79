"""Session leases and replica mailboxes on a real Redis: races, takeovers, restarts.

Replicas are separate objects on one redis-server; a "restart" is a new object
with the same replica id, a "death" is an object nobody uses again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest
from redis.asyncio import Redis

from gateway.replicas import Delivery, Lease, ReplicaError, ReplicaMailbox, SessionLeases
from tests.fakes.clock import FakeClock

if TYPE_CHECKING:
    from tests.fakes.redis_server import RedisServer

pytest_plugins = ["tests.fakes.redis_fixtures"]


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
async def client(redis_server: RedisServer, request: pytest.FixtureRequest) -> AsyncIterator[Redis]:
    redis = Redis.from_url(redis_server.url, socket_timeout=5, protocol=request.param)
    yield redis
    await redis.aclose()


def payloads(deliveries: list[Delivery]) -> list[str]:
    return [d.payload["n"] for d in deliveries]


async def test_exactly_one_of_many_racing_replicas_gets_the_session(client: Redis) -> None:
    replicas = [SessionLeases(client, f"r{n}") for n in range(50)]
    results = await asyncio.gather(*(r.acquire("telegram:42") for r in replicas))
    winners = [lease for lease in results if lease is not None]
    assert len(winners) == 1
    assert await replicas[0].owner("telegram:42") == winners[0]
    again = await replicas[int(winners[0].owner[1:])].acquire("telegram:42")
    assert again == winners[0]  # the holder gets its own lease back


async def test_an_expired_lease_is_taken_over_with_a_larger_token(client: Redis) -> None:
    clock = FakeClock()
    old = SessionLeases(client, "old", ttl=30, clock=clock)
    new = SessionLeases(client, "new", ttl=30, clock=clock)
    first = await old.acquire("s")
    assert first is not None
    assert await new.acquire("s") is None
    await clock.advance(29)
    assert await old.renew(first)
    await clock.advance(29)
    assert await new.acquire("s") is None  # renewed: still old's
    await clock.advance(31)
    assert await old.owner("s") is None
    taken = await new.acquire("s")
    assert taken is not None and taken.owner == "new"
    assert taken.token > first.token
    assert not await old.renew(first)
    assert not await old.release(first)
    assert await new.owner("s") == taken


async def test_a_lease_expires_in_real_time_too(client: Redis) -> None:
    old = SessionLeases(client, "old", ttl=0.3)
    new = SessionLeases(client, "new", ttl=30)
    first = await old.acquire("s")
    assert first is not None
    deadline = time.monotonic() + 5
    while (taken := await new.acquire("s")) is None:
        assert time.monotonic() < deadline, "the lease never expired"
        await asyncio.sleep(0.02)
    assert taken.token > first.token
    assert not await old.renew(first)


async def test_release_only_frees_our_own_lease(client: Redis) -> None:
    one, two = SessionLeases(client, "one"), SessionLeases(client, "two")
    lease = await one.acquire("s")
    assert lease is not None
    forged = Lease("s", "one", lease.token)
    assert not await two.release(forged)  # two is not the owner, whatever the object says
    assert not await one.release(Lease("s", "one", lease.token + 1))
    assert await one.release(lease)
    assert await one.owner("s") is None
    taken = await two.acquire("s")
    assert taken is not None and taken.token > lease.token


async def test_renew_all_reports_exactly_the_lost_leases(client: Redis) -> None:
    clock = FakeClock()
    mine = SessionLeases(client, "mine", ttl=30, clock=clock)
    other = SessionLeases(client, "other", ttl=30, clock=clock)
    held = [await mine.acquire(f"s{n}") for n in range(200)]
    leases = [lease for lease in held if lease is not None]
    assert len(leases) == 200
    await clock.advance(31)
    taken = {f"s{n}" for n in (3, 50, 199)}
    for session in taken:
        assert await other.acquire(session) is not None
    lost = await mine.renew_all(leases)
    assert {lease.session for lease in lost} == taken
    assert (await mine.owner("s4")) == leases[4]  # expired but untaken: renewed
    assert await mine.renew_all([]) == []


async def test_a_restarted_replica_gets_its_unacked_messages_first(client: Redis) -> None:
    sender = ReplicaMailbox(client, "front")
    for n in range(3):
        await sender.send("owner", {"n": str(n), "text": "hello"})
    before = ReplicaMailbox(client, "owner")
    got = await before.receive(block_ms=0, count=10)
    assert payloads(got) == ["0", "1", "2"]
    await before.ack(got[0].id)
    await sender.send("owner", {"n": "3"})

    after = ReplicaMailbox(client, "owner")  # the restart
    assert payloads(await after.receive(block_ms=0, count=1)) == ["1"]
    replay = await after.receive(block_ms=0, count=10)
    assert payloads(replay) == ["2"]
    fresh = await after.receive(block_ms=0, count=10)
    assert payloads(fresh) == ["3"]
    for delivery in [*replay, *fresh]:
        await after.ack(delivery.id)
    assert await after.receive(block_ms=0, count=10) == []
    third = ReplicaMailbox(client, "owner")
    assert payloads(await third.receive(block_ms=0, count=10)) == ["1"]  # never acked


async def test_a_blocked_receive_wakes_for_a_message(client: Redis) -> None:
    owner = ReplicaMailbox(client, "owner")
    assert await owner.receive(block_ms=0, count=1) == []
    waiting = asyncio.create_task(owner.receive(block_ms=3000, count=1))
    await asyncio.sleep(0.05)
    await ReplicaMailbox(client, "front").send("owner", {"n": "7"})
    assert payloads(await waiting) == ["7"]


async def test_claim_from_a_dead_replica_takes_read_and_unread_entries(client: Redis) -> None:
    front = ReplicaMailbox(client, "front")
    for n in range(5):
        await front.send("dead", {"n": str(n)})
    dead = ReplicaMailbox(client, "dead")
    assert payloads(await dead.receive(block_ms=0, count=2)) == ["0", "1"]  # read, never acked

    heir = ReplicaMailbox(client, "heir")
    claimed = await heir.claim_from("dead", count=2)
    assert payloads(claimed) == ["0", "1", "2", "3", "4"]
    assert await heir.receive(block_ms=0, count=10) == []  # claimed ones are not delivered twice
    assert await heir.claim_from("dead") == []
    assert await ReplicaMailbox(client, "dead").receive(block_ms=0, count=10) == []

    # the heir dies before acking two of them: its own heir gets exactly those
    for delivery in claimed[:3]:
        await heir.ack(delivery.id)
    second_heir = ReplicaMailbox(client, "second-heir")
    assert payloads(await second_heir.claim_from("heir")) == ["3", "4"]


async def test_claims_are_not_replayed_after_a_restart_once_acked(client: Redis) -> None:
    await ReplicaMailbox(client, "front").send("dead", {"n": "1"})
    heir = ReplicaMailbox(client, "heir")
    claimed = await heir.claim_from("dead")
    assert payloads(claimed) == ["1"]
    assert await heir.receive(block_ms=0, count=10) == []
    await heir.ack(claimed[0].id)
    assert await ReplicaMailbox(client, "heir").receive(block_ms=0, count=10) == []


async def test_the_mailbox_survives_a_redis_restart(
    client: Redis, redis_server: RedisServer
) -> None:
    owner = ReplicaMailbox(client, "owner")
    assert await owner.receive(block_ms=0, count=1) == []
    redis_server.stop()
    with pytest.raises(ReplicaError, match="unreachable"):
        await owner.receive(block_ms=0, count=1)
    with pytest.raises(ReplicaError, match="unreachable"):
        await SessionLeases(client, "r").acquire("s")
    redis_server.start()  # empty: the stream and its group are gone
    await ReplicaMailbox(client, "front").send("owner", {"n": "9"})
    assert payloads(await owner.receive(block_ms=0, count=1)) == ["9"]


async def test_a_stopping_replica_hands_read_and_unread_entries_over_in_order(
    client: Redis,
) -> None:
    front = ReplicaMailbox(client, "front")
    await front.send("heir", {"n": "0"})
    for n in range(1, 6):
        await front.send("stopping", {"n": str(n)})
    stopping = ReplicaMailbox(client, "stopping")
    assert payloads(await stopping.receive(block_ms=0, count=2)) == ["1", "2"]  # not acked

    assert await stopping.hand_over("heir", count=2) == 5
    heir = ReplicaMailbox(client, "heir")
    assert payloads(await heir.receive(block_ms=0, count=10)) == ["0", "1", "2", "3", "4", "5"]
    assert await ReplicaMailbox(client, "stopping").receive(block_ms=0, count=10) == []
    with pytest.raises(ValueError, match="itself"):
        await heir.hand_over("heir")

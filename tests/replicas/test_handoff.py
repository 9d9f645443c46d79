"""Routing a message to its session's owner on a real Redis: one round trip in the
common cases, the long way (claim what a stopped replica owed) otherwise.

Two or three replicas are separate ``Coordination`` objects (and clients) on one
redis-server; the server's own command counts (``INFO commandstats``) tell how many
calls a route made.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest
import redis

from gateway.app._ownership import SessionOwnership
from gateway.clock import SystemClock
from gateway.replicas import Coordination

if TYPE_CHECKING:
    from tests.fakes.redis_server import RedisServer

pytest_plugins = ["tests.fakes.redis_fixtures"]

KEY = '["telegram", "1", "1", null]'


@pytest.fixture
async def replicas(redis_server: RedisServer) -> AsyncIterator[dict[str, SessionOwnership]]:
    found: dict[str, SessionOwnership] = {}
    for name in ("a", "b", "c"):
        coordination = Coordination.open(redis_server.url, name, lease_seconds=15)
        await coordination.registry.heartbeat()
        found[name] = SessionOwnership(coordination, SystemClock(), lease_seconds=15)
    yield found
    for ownership in found.values():
        await ownership.coordination.aclose()


def calls(url: str) -> int:
    """Commands the replicas sent the server so far (neither scripts' inner calls nor
    this count's own connection)."""
    client = redis.Redis.from_url(url)
    try:
        stats = client.info("commandstats")
    finally:
        client.close()
    inner = {"cmdstat_" + c for c in ("hmget", "hset", "pexpire", "incr", "xadd", "zscore")}
    inner |= {"cmdstat_time", "cmdstat_sismember", "cmdstat_info", "cmdstat_hello"}
    return sum(int(v["calls"]) for k, v in stats.items() if k not in inner)


async def texts(ownership: SessionOwnership) -> list[str]:
    deliveries = await ownership.coordination.mailbox.receive(0, 100)
    return [d.payload["msg"] for d in deliveries]


async def test_a_route_is_one_call_whoever_holds_the_session(
    replicas: dict[str, SessionOwnership], redis_server: RedisServer
) -> None:
    """The first route takes the free lease (a fencing token), later ones keep it; a
    route from another replica goes to the holder's stream: one call to Redis each
    (before: the lease, then the stream; three calls and the stream from another)."""
    a, b = replicas["a"], replicas["b"]
    for router in (a, b):  # connected, the script loaded: what every later route finds
        await router.route(router.replica_id, {"key": router.replica_id, "msg": "warm"})
        await texts(router)
    for n, router in enumerate([a, a, b, b]):
        before = calls(redis_server.url)
        assert await router.route(KEY, {"key": KEY, "msg": f"m{n}"}) == "a"
        assert calls(redis_server.url) - before == 1
    assert await texts(a) == ["m0", "m1", "m2", "m3"]
    assert await texts(b) == []
    lease = await a.coordination.leases.owner(KEY)
    assert lease is not None and lease.owner == "a"
    assert a.holds(KEY) and not b.holds(KEY)
    assert a.take_fresh(KEY)  # taken here: the session is read afresh once


async def test_a_session_of_a_stopped_replica_comes_after_what_it_owed(
    replicas: dict[str, SessionOwnership],
) -> None:
    """The holder left (its messages not yet served): a route claims its mailbox into
    this replica's queue of owed messages, takes the lease over with a new token and
    sends the new message behind them."""
    a, b = replicas["a"], replicas["b"]
    assert await a.route(KEY, {"key": KEY, "msg": "m0"}) == "a"
    token = (await a.coordination.leases.owner(KEY)).token  # type: ignore[union-attr]
    await a.coordination.registry.leave()

    assert await b.route(KEY, {"key": KEY, "msg": "m1"}) == "b"
    owed = [b.claimed.get_nowait().payload["msg"] for _ in range(b.claimed.qsize())]
    assert owed == ["m0"]
    assert await texts(b) == ["m1"]
    lease = await b.coordination.leases.owner(KEY)
    assert lease is not None and lease.owner == "b" and lease.token > token
    assert b.holds(KEY)


async def test_a_lease_run_out_of_a_stopped_replica_is_claimed_before_it_is_used(
    replicas: dict[str, SessionOwnership], redis_server: RedisServer
) -> None:
    """A lease that ran out while its holder was stopping: its mailbox is claimed
    before the free lease is taken, so nothing newer goes first."""
    a, c = replicas["a"], replicas["c"]
    assert await a.route(KEY, {"key": KEY, "msg": "m0"}) == "a"
    await a.coordination.registry.leave()
    client = redis.Redis.from_url(redis_server.url)
    try:  # the lease ran out (its hash is still there)
        client.hset(f"chorus:lease:{KEY}", "expires", "1")
    finally:
        client.close()

    assert await c.route(KEY, {"key": KEY, "msg": "m1"}) == "c"
    assert [c.claimed.get_nowait().payload["msg"] for _ in range(c.claimed.qsize())] == ["m0"]
    assert await texts(c) == ["m1"]

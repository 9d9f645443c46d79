"""Real gateway replicas under a Redis restart, a graceful stop and a pause.

Each test runs real ``chorus gateway --replica-id`` processes on one redis-server
and one PostgreSQL database (``tests/replicas/cluster.py``); the fake Telegram
posts its webhook updates to the replicas in turn, as a load balancer would.
"""

from __future__ import annotations

import asyncio
import signal
import time

import pytest

from tests.fakes.redis_server import RedisServer
from tests.replicas.cluster import Cluster
from tests.replicas.test_replicas_process import (
    FIRST_USER,
    answers,
    cluster,
    converse,
    echo,
    lease_owners,
)

pytest_plugins = ["tests.fakes.redis_fixtures", "tests.fakes.postgres_fixtures"]

pytestmark = pytest.mark.slow

__all__ = ["cluster"]  # the fixture, shared with the other replica tests


async def test_after_a_redis_restart_no_message_is_late_or_overtaken(
    cluster: Cluster, redis_server: RedisServer
) -> None:
    """Redis restarts between two messages of 6 people served by 2 replicas, whose
    pooled connections are then stale: each of the next 7 messages of each person is
    answered within 8 s (well before the 20 s orphan sweep) and in order, 6 of 6."""
    cluster.env.update(
        {
            "CHORUS_GATEWAY__LEASE_SECONDS": "30",  # no upkeep round notices the restart
            "CHORUS_GATEWAY__ORPHAN_SECONDS": "20",
        }
    )
    cluster.llm.responder(echo())
    a = await cluster.replica("replica-a")
    b = await cluster.replica("replica-b")
    cluster.balance(a, b)
    users = [FIRST_USER + n for n in range(6)]
    await asyncio.gather(*(converse(cluster.telegram, u, range(1)) for u in users))

    redis_server.stop()
    redis_server.start()  # the same port, empty; no replica has noticed yet

    await asyncio.gather(*(converse(cluster.telegram, u, range(1, 8), timeout=8) for u in users))
    for user in users:
        assert answers(cluster.telegram, user) == [f"echo: u{user} m{n}" for n in range(8)]


async def test_a_replica_stopping_hands_its_mailbox_over_at_once(cluster: Cluster) -> None:
    """A replica is stopped (SIGTERM) while it finishes a turn; meanwhile the other
    5 of 6 people write to the other replica, which routes the messages of the stopping
    one's sessions to it. At its exit it hands them over: each of the 6 is answered
    within 4 s of the exit (the others' upkeep, every 20 s here, is not waited for),
    and in order, 6 of 6."""
    cluster.env["CHORUS_GATEWAY__LEASE_SECONDS"] = "60"
    cluster.llm.responder(echo())
    a = await cluster.replica("replica-a")
    b = await cluster.replica("replica-b")
    cluster.balance(a, b)
    users = [FIRST_USER + n for n in range(6)]
    await asyncio.gather(*(converse(cluster.telegram, u, range(2)) for u in users))
    assert lease_owners(cluster.redis_url)["replica-a"] > 0

    slow = users[0]
    cluster.llm.responder(echo(delay=3.0))
    cluster.balance(a)
    cluster.telegram.message(f"u{slow} m2", user_id=slow)
    await cluster.telegram.wait_for(lambda: cluster.llm.in_flight >= 1, what="a turn running")
    a.proc.send_signal(signal.SIGTERM)  # a rolling restart: a goes first
    cluster.balance(b)
    cluster.llm.responder(echo())
    for user in users[1:]:
        cluster.telegram.message(f"u{user} m2", user_id=user)
    assert await asyncio.to_thread(a.proc.wait, 60) == 0
    stopped = time.monotonic()
    for user in users:
        await cluster.telegram.wait_for(
            lambda u=user: f"echo: u{u} m2" in answers(cluster.telegram, u),
            timeout=30,
            what=f"the answer to u{user} m2",
        )
    assert time.monotonic() - stopped < 4.0
    await asyncio.gather(*(converse(cluster.telegram, u, range(3, 4)) for u in users))
    for user in users:
        assert answers(cluster.telegram, user) == [f"echo: u{user} m{n}" for n in range(4)]
    assert set(lease_owners(cluster.redis_url)) == {"replica-b"}

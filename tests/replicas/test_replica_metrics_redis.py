"""A replica's mailbox depth on a real Redis, as a scrape reads it: what the replica has
not finished with, and left out (never 0) while Redis does not answer."""

from __future__ import annotations

import logging

import pytest
from redis.asyncio import Redis

from gateway.ops import Metrics
from gateway.replicas import ReplicaMailbox
from tests.fakes.redis_server import RedisServer
from tests.scrape import names, samples, value

pytest_plugins = ["tests.fakes.redis_fixtures"]


async def scrape(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    await metrics.refresh()
    body, _ = metrics.render()
    return samples(body.decode())


async def test_the_mailbox_depth_counts_unfinished_entries_and_is_left_out_without_redis(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    client = Redis.from_url(redis_server.url, socket_timeout=1, socket_connect_timeout=1)
    mine = ReplicaMailbox(client, "replica-a")
    other = ReplicaMailbox(client, "replica-b")
    held = {"n": 0}
    metrics = Metrics()
    replica = metrics.set_replica("replica-a")
    replica.set_sources(leases_held=lambda: held["n"], mailbox_depth=mine.depth)
    try:
        found = await scrape(metrics)
        assert value(found, "chorus_replica_mailbox_depth") == 0
        assert value(found, "chorus_replica_leases_held") == 0
        assert value(found, "target_info", replica="replica-a") == 1

        for n in range(3):
            await other.send("replica-a", {"n": str(n)})
        [first, *_] = await mine.receive(0, 1)  # read, not finished: still owed
        held["n"] = 2
        found = await scrape(metrics)
        assert value(found, "chorus_replica_mailbox_depth") == 3
        assert value(found, "chorus_replica_leases_held") == 2
        await mine.ack(first.id)
        assert value(await scrape(metrics), "chorus_replica_mailbox_depth") == 2

        redis_server.stop()
        with caplog.at_level(logging.WARNING, logger="gateway.ops"):
            for _ in range(3):
                found = await scrape(metrics)
                assert "chorus_replica_mailbox_depth" not in names(found)
                assert value(found, "chorus_replica_leases_held") == 2
        unavailable = [r for r in caplog.records if "mailbox depth unavailable" in r.message]
        assert len(unavailable) == 1  # one line, not one per scrape

        redis_server.start()
        assert value(await scrape(metrics), "chorus_replica_mailbox_depth") == 0  # a new Redis
    finally:
        await client.aclose()

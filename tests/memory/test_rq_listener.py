"""A worker that stops ends rq's command listener there and then: the thread that
reads the worker's channel is gone when the worker's teardown returns."""

from __future__ import annotations

import redis

from memory.jobs._rq_worker import ChorusWorker
from tests.fakes.redis_server import RedisServer
from tests.waiting import until_sync

pytest_plugins = ["tests.fakes.redis_fixtures"]


def listening(client: redis.Redis, channel: str) -> bool:
    """Whether Redis counts a subscriber on ``channel``."""
    counts = dict(client.pubsub_numsub(channel))
    return int(counts.get(channel.encode(), 0)) > 0


def test_the_listener_ends_when_the_worker_unsubscribes(redis_server: RedisServer) -> None:
    client = redis.Redis.from_url(redis_server.url)
    worker = ChorusWorker(["chorus"], connection=client, name="w-listener")
    worker.subscribe()
    thread = worker.pubsub_thread
    assert thread is not None
    until_sync(lambda: listening(client, worker.pubsub_channel_name), what="the subscription")
    worker.unsubscribe()
    assert not thread.is_alive()
    assert not listening(client, worker.pubsub_channel_name)

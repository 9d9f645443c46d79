"""The shared inbox in PostgreSQL is pruned by the replicas, as a single process prunes
its own at start: old settled deliveries go, recent ones stay."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest

from gateway.sessions import Inbox
from gateway.sessions._inbox import KEEP_SETTLED
from tests.fakes import FakeOpenAI, Reply
from tests.fakes.clock import FakeClock
from tests.fakes.redis_server import RedisServer
from tests.fakes.telegram_api import FakeTelegram
from tests.replicas.cluster import Cluster

pytest_plugins = ["tests.fakes.redis_fixtures", "tests.fakes.postgres_fixtures"]

pytestmark = pytest.mark.slow


@pytest.fixture
async def cluster(
    tmp_path: Path, redis_server: RedisServer, postgres_url: str, server: FakeOpenAI
) -> AsyncIterator[Cluster]:
    with FakeTelegram() as telegram:
        made = Cluster(tmp_path / "cluster", redis_server.url, postgres_url, server, telegram)
        try:
            yield made
        finally:
            made.close()


def receipts(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {str(row[0]) for row in conn.execute("SELECT receipt FROM inbox").fetchall()}


async def test_a_replica_forgets_old_settled_deliveries_of_the_shared_inbox(
    cluster: Cluster,
) -> None:
    cluster.llm.responder(lambda body: Reply.of_text("hello"))
    long_ago = FakeClock(time.time() - KEEP_SETTLED - 3600)
    with Inbox(cluster.database_url, clock=long_ago) as old:
        old.take_many("telegram", [("1", "{}"), ("2", "{}")])
        old.done("telegram", ["1", "2"])
    with Inbox(cluster.database_url) as recent:
        recent.take("telegram", "3", "{}")
        recent.done("telegram", ["3"])
    assert receipts(cluster.database_url) == {"1", "2", "3"}

    await cluster.replica("replica-a")

    assert receipts(cluster.database_url) == {"3"}
    assert "forgot 2 old deliveries" in cluster.tail(cluster.processes[0], 200)

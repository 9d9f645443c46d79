"""What an operator graphs of several replicas and their workers: two real ``chorus
gateway --replica-id`` processes and a ``chorus worker`` on one redis-server and one
PostgreSQL database, scraped over HTTP.

Every metric the Grafana dashboard in deploy/grafana/ queries is exported by a live
replica or worker; a replica killed with SIGKILL has its mailbox claimed by the
other, which counts the take-over.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes import FakeOpenAI
from tests.fakes.redis_server import RedisServer
from tests.fakes.telegram_api import FakeTelegram
from tests.replicas.cluster import Cluster, free_port
from tests.replicas.test_replicas_process import converse, echo, http_get
from tests.scrape import Samples, names, samples, value
from tests.waiting import until

pytest_plugins = ["tests.fakes.redis_fixtures", "tests.fakes.postgres_fixtures"]
pytestmark = pytest.mark.slow

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "chorus.json"
METRIC_NAME = re.compile(r"\b(?:chorus|process|python)_[a-z_]+\b")
FIRST_USER = 7000


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


def dashboard_metrics() -> set[str]:
    """The metric names every query of the dashboard uses."""
    found: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("expr"), str):
                found.update(METRIC_NAME.findall(node["expr"]))
            for child in node.values():
                walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(json.loads(DASHBOARD.read_text()))
    return found


async def scrape(url: str) -> Samples:
    status, text = await asyncio.to_thread(http_get, f"{url}/metrics")
    assert status == 200
    return samples(text)


async def test_the_dashboard_queries_what_replicas_and_workers_export_and_take_overs_count(
    cluster: Cluster,
) -> None:
    cluster.env.update(
        {"CHORUS_GATEWAY__LEASE_SECONDS": "3", "CHORUS_GATEWAY__ORPHAN_SECONDS": "3"}
    )
    cluster.llm.responder(echo())
    a = await cluster.replica("replica-a")
    b = await cluster.replica("replica-b")
    worker_port = free_port()
    cluster.worker("worker-1", CHORUS_WORKER__METRICS__PORT=str(worker_port))
    worker_url = f"http://127.0.0.1:{worker_port}"
    cluster.balance(a, b)
    users = [FIRST_USER + n for n in range(6)]
    await asyncio.wait_for(
        asyncio.gather(*(converse(cluster.telegram, u, range(2)) for u in users)), 120
    )

    cluster.telegram.message("/new", user_id=users[0])  # the session's end: a job

    async def worker_ran_jobs() -> bool:
        try:
            found = await scrape(worker_url)
        except OSError:
            return False
        return value(found, "chorus_worker_jobs_total", kind="end_session", outcome="done") > 0

    await until(worker_ran_jobs, 60, "the worker's end_session job counted", poll=0.5)
    exported = names(await scrape(a.url)) | names(await scrape(worker_url))
    wanted = dashboard_metrics()
    assert len(wanted) > 20
    assert wanted <= exported, sorted(wanted - exported)
    assert not [name for name in exported if name.endswith("_created")]

    before = await scrape(b.url)
    assert value(before, "chorus_replica_takeovers_total", what="mailbox") == 0
    assert value(before, "chorus_replica_takeovers_total", what="lease") == 0
    assert value(before, "chorus_replica_handovers_total", what="orphan") == 0
    assert value(before, "chorus_replica_mailbox_depth") == 0

    a.kill()  # SIGKILL: b claims its mailbox once its heartbeat ran out
    cluster.balance(b)

    async def mailbox_taken_over() -> bool:
        found = await scrape(b.url)
        return value(found, "chorus_replica_takeovers_total", what="mailbox") >= 1

    await until(mailbox_taken_over, 60, "b's take-over of a's mailbox", poll=0.5)
    await asyncio.wait_for(
        asyncio.gather(*(converse(cluster.telegram, u, range(2, 3)) for u in users)), 120
    )
    after = await scrape(b.url)
    assert value(after, "chorus_replica_leases_held") == len(users)  # every session is b's now
    assert value(after, "chorus_replica_takeovers_total", what="mailbox") == 1

"""Replicas and workers started all at once on an empty PostgreSQL database all come up.

Every one of them creates the tables it needs when it opens them; the schema
work runs under one PostgreSQL advisory lock, so none of them trips over
another one's ``CREATE TABLE`` (``duplicate key value violates unique
constraint "pg_type_typname_nsp_index"``) and exits.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.fakes import FakeOpenAI, Reply
from tests.fakes.postgres_server import PostgresServer
from tests.fakes.redis_server import RedisServer
from tests.fakes.telegram_api import FakeTelegram
from tests.replicas.cluster import Cluster
from tests.waiting import until

pytest_plugins = ["tests.fakes.redis_fixtures", "tests.fakes.postgres_fixtures"]

pytestmark = pytest.mark.slow

ROUNDS = 3
OPENER_ROUNDS = 3
REPLICAS = 3
WORKERS = 1
READY_WITHIN = 180.0
"""Seconds for a replica to come up: several start on the same few cores at once."""
OPENERS = 8

OPEN_EVERY_TABLE = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from gateway.access import GatewayDB
    from gateway.sessions import Inbox
    from memory.database import close_pool, open_pool
    from memory.jobs import JobState, Outbox
    from memory.providers import ProviderHealth
    from memory.store import PostgresMemoryFiles, StagedWrites
    from memory.transcripts import SessionDB

    url, barrier, name = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    pool = open_pool(url)  # connected already: the schema work starts at once
    (barrier / name).touch()  # ready
    while not (barrier / "go").exists():  # every process set off at the same instant
        time.sleep(0.001)
    for open_ in (SessionDB, Inbox, GatewayDB, JobState, Outbox, ProviderHealth, StagedWrites):
        open_(url).close()
    PostgresMemoryFiles(url, barrier / "memories").close()
    close_pool(pool)
    """
)


@pytest.fixture
async def telegram() -> AsyncIterator[FakeTelegram]:
    with FakeTelegram() as fake:
        yield fake


@pytest.mark.timeout(ROUNDS * 300)
async def test_replicas_and_workers_started_at_once_on_an_empty_database_all_come_up(
    tmp_path: Path,
    redis_server: RedisServer,
    postgres_server: PostgresServer,
    server: FakeOpenAI,
    telegram: FakeTelegram,
) -> None:
    """3 replicas and a worker started together on an empty database, 3 rounds: every
    one comes up and stays up, none logs a duplicate key or a traceback (before: one of
    two replicas exited on ``pg_type_typname_nsp_index`` in 2 of 4 runs)."""
    server.responder(lambda body: Reply.of_text("hello"))
    for round_ in range(ROUNDS):
        cluster = Cluster(
            tmp_path / f"round-{round_}",
            redis_server.url,
            postgres_server.create_database(),  # empty: no table yet
            server,
            telegram,
        )
        try:
            workers = [cluster.worker(f"worker-{n}") for n in range(WORKERS)]
            replicas = await asyncio.gather(
                *(
                    cluster.replica(f"replica-{n}", ready_within=READY_WITHIN)
                    for n in range(REPLICAS)
                )
            )
            assert len(replicas) == REPLICAS  # every one answered /readyz 200
            for worker in workers:  # a worker says where it works once its tables are open
                await until(
                    lambda w=worker: (
                        w.proc.poll() is not None
                        or "worker on " in w.log.read_text(errors="replace")
                    ),
                    READY_WITHIN,
                    f"{worker.name} to open its tables",
                )
            for worker in workers:
                assert worker.proc.poll() is None, cluster.tail(worker)
            for process in cluster.processes:
                log = process.log.read_text(errors="replace")
                assert "duplicate key" not in log, cluster.tail(process)
                assert "Traceback" not in log, cluster.tail(process)
        finally:
            cluster.close()


@pytest.mark.timeout(OPENER_ROUNDS * 300)
def test_many_processes_opening_every_table_at_the_same_instant_all_succeed(
    tmp_path: Path, postgres_server: PostgresServer
) -> None:
    """What each replica and worker does at start, by many processes in the same millisecond."""
    for round_ in range(OPENER_ROUNDS):
        url = postgres_server.create_database()
        barrier = tmp_path / f"round-{round_}"
        barrier.mkdir()
        openers = [
            subprocess.Popen(
                [sys.executable, "-c", OPEN_EVERY_TABLE, url, str(barrier), f"opener-{n}"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            for n in range(OPENERS)
        ]
        # Each opener gets ready once it has imported chorus and connected, which takes
        # long on a loaded machine: waited for as long as every one of them lives (the
        # test's own timeout bounds a hang).
        while len(list(barrier.glob("opener-*"))) < OPENERS:
            assert all(o.poll() is None for o in openers), "an opener died before the start"
            time.sleep(0.01)
        (barrier / "go").touch()
        failures = []
        for opener in openers:
            _, err = opener.communicate()
            if opener.returncode != 0:
                failures.append(err.decode(errors="replace").strip().splitlines()[-1:])
        assert not failures, f"round {round_}: {failures}"

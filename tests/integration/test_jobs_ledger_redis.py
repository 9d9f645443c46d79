"""The gateway's stack with Redis and `chorus worker` processes: the database is the truth.

Redis restarted empty loses no turn sync and no session end (the job ledger in
``state.db`` sends them again); a worker paused mid-job (SIGSTOP) while Redis
hands its job to another worker still syncs the turn once, and the session's
next job waits for it. The recorder provider logs every call the workers make.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from memory.jobs import JobLedger, RQQueue
from tests.fakes import FakeOpenAI, RedisServer
from tests.integration.conftest import Stack, build_stack, close_stack, stack_settings
from tests.integration.recorder_plugin import install_recorder, read_log, set_behaviour, wait_for
from tests.integration.test_providers_redis import (
    ChorusWorkers,
    echo,
    entries,
    env_for,
    wait_idle,
    worker_log,
)

pytest_plugins = ["tests.fakes.redis_fixtures"]

GRACE = 2.5
"""Seconds after which a job the ledger holds counts as lost when Redis has no copy
(``RQQueue.reconcile`` leaves younger ones alone: they may be on their way)."""


@pytest.fixture
async def ledger_stack(
    chorus_home: Path, server: FakeOpenAI, redis_server: RedisServer
) -> AsyncIterator[Stack]:
    chorus_home.mkdir(mode=0o700)
    install_recorder(chorus_home)
    settings = stack_settings(
        chorus_home,
        server,
        CHORUS_REDIS__URL=redis_server.url,
        CHORUS_REDIS__RETRY_INTERVALS="[0]",
    )
    built = await build_stack(settings)
    assert isinstance(built.background.queue, RQQueue)
    yield built
    await close_stack(built)


@pytest.fixture
def chorus_workers(
    chorus_home: Path, server: FakeOpenAI, redis_server: RedisServer
) -> Iterator[ChorusWorkers]:
    pool = ChorusWorkers(chorus_home, env_for(chorus_home, server, redis_server))
    yield pool
    pool.stop_all()


async def test_redis_restarted_empty_loses_no_turn_sync_and_no_session_end(
    ledger_stack: Stack,
    server: FakeOpenAI,
    chorus_workers: ChorusWorkers,
    redis_server: RedisServer,
) -> None:
    """3 sessions × 3 turns (9 syncs) and 1 session end wait in Redis, no worker runs;
    Redis restarts empty (0 jobs left in it). A `chorus worker` started then syncs all 9
    turns once each, in order, and ends the session (before: every one of them lost)."""
    home = ledger_stack.settings.home
    server.responder(echo)
    agents = [await ledger_stack.agent(f"w{i}", f"slack:U{i}") for i in range(3)]
    for turn in range(1, 4):
        for agent in agents:
            await agent.run_turn(f"{agent.session.session_id} turn {turn}")
    ledger_stack.background.scheduler.end_session("w0", "idle")
    assert await asyncio.to_thread(ledger_stack.background.queue.flush, 20)
    assert ledger_stack.background.queue.status().queued > 0
    await asyncio.sleep(GRACE)
    redis_server.stop()
    redis_server.start()
    assert ledger_stack.background.queue.status().queued == 0  # Redis lost every job

    chorus_workers.start()
    await asyncio.to_thread(
        wait_for, lambda: len(entries(home, "sync_turn")) >= 9, 90, "9 synced turns"
    )
    await asyncio.to_thread(wait_for, lambda: entries(home, "on_session_end"), 60, "the end")
    await wait_idle(ledger_stack)
    synced = entries(home, "sync_turn")
    assert len(synced) == 9
    for agent in agents:
        sid = agent.session.session_id
        assert [e["user"] for e in synced if e["session"] == sid] == [
            f"{sid} turn {n}" for n in (1, 2, 3)
        ]
    assert len(entries(home, "on_session_end")) == 1
    record = await ledger_stack.db.get_session("w0")
    assert record is not None and record.end_reason == "idle"
    ledger = JobLedger(home / "state.db")
    try:
        await asyncio.to_thread(
            wait_for, lambda: ledger.count("pending") + ledger.count("running") == 0, 30, "done"
        )
    finally:
        ledger.close()


async def test_a_paused_worker_syncs_its_turn_once_and_the_next_job_waits_for_it(
    ledger_stack: Stack,
    server: FakeOpenAI,
    chorus_workers: ChorusWorkers,
    tmp_path: Path,
) -> None:
    """SIGSTOP of the worker syncing turn 1, long enough for rq to hand the job to a second
    worker (its liveness expires): the second waits for the session's lease. SIGCONT: turn 1
    is synced once (1 of 1, before: twice) and the prefetch after it runs after it."""
    home = ledger_stack.settings.home
    gate = tmp_path / "gate"
    set_behaviour(home, block_sync_until=str(gate))
    paused = chorus_workers.start()
    agent = await ledger_stack.agent("pause")
    server.reply("ok")
    assert await agent.run_turn("remember the pause") == "ok"
    await asyncio.to_thread(wait_for, lambda: entries(home, "sync_start"), 60, "the sync")
    assert entries(home, "sync_start")[0]["pid"] == paused.pid
    os.kill(paused.pid, signal.SIGSTOP)
    try:
        other = chorus_workers.start()
        await asyncio.to_thread(
            wait_for,
            lambda: "waits for the lease" in worker_log(home, 1),
            60,
            "the second worker to take the job and wait for the lease",
        )
        gate.touch()
    finally:
        os.kill(paused.pid, signal.SIGCONT)
    await asyncio.to_thread(wait_for, lambda: entries(home, "queue_prefetch"), 60, "prefetch")
    await wait_idle(ledger_stack)
    assert [e["pid"] for e in entries(home, "sync_start")] == [paused.pid]
    [synced] = entries(home, "sync_turn")
    assert synced["user"] == "remember the pause" and synced["pid"] == paused.pid
    order = [e["hook"] for e in read_log(home) if e["hook"] in ("sync_turn", "queue_prefetch")]
    assert order == ["sync_turn", "queue_prefetch"]
    assert other.poll() is None

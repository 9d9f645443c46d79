"""The same stack with Redis: `chorus worker` processes run every job, through outages and kills."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from agent.agent import Agent
from memory.jobs import RQQueue
from memory.jobs._rq_worker import RECONNECT_MAX_SECONDS
from tests.fakes import FakeOpenAI, RedisServer
from tests.integration.conftest import Stack, build_stack, close_stack, stack_settings
from tests.integration.recorder_plugin import install_recorder, read_log, set_behaviour, wait_for

pytest_plugins = ["tests.fakes.redis_fixtures"]

CHORUS = Path(sys.executable).with_name("chorus")
ROOT = Path(__file__).resolve().parents[2]


class ChorusWorkers:
    """`chorus worker` subprocesses, each in its own process group."""

    def __init__(self, home: Path, env: dict[str, str]) -> None:
        self.home = home
        self.env = env
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self) -> subprocess.Popen[bytes]:
        log = (self.home / f"worker-{len(self.procs)}.log").open("wb")
        proc = subprocess.Popen(
            [str(CHORUS), "worker"],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.procs.append(proc)
        return proc

    def kill(self, proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    self.kill(proc)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        for index in range(len(self.procs)):  # shown by pytest when the test failed
            lines = (self.home / f"worker-{index}.log").read_text(errors="replace").splitlines()
            print(f"--- worker-{index}.log (last 40 lines)", *lines[-40:], sep="\n")


def env_for(
    home: Path, server: FakeOpenAI, redis: RedisServer, provider: str = "recorder"
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
    env.update(
        {
            "CHORUS_HOME": str(home),
            "CHORUS_REDIS__URL": redis.url,
            "CHORUS_REDIS__RETRY_INTERVALS": "[0]",
            "CHORUS_MEMORY__PROVIDER": provider,
            "CHORUS_MEMORY__FLUSH_MIN_TURNS": "1",
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-test",
            "PYTHONPATH": str(ROOT),
        }
    )
    return env


@pytest.fixture
async def redis_stack(
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
def workers(
    chorus_home: Path, server: FakeOpenAI, redis_server: RedisServer
) -> Iterator[ChorusWorkers]:
    pool = ChorusWorkers(chorus_home, env_for(chorus_home, server, redis_server))
    yield pool
    pool.stop_all()


def entries(home: Path, hook: str) -> list[dict[str, Any]]:
    return [e for e in read_log(home) if e["hook"] == hook]


def idle(stack: Stack) -> bool:
    status = stack.background.queue.status()
    waiting = status.outbox + status.queued + status.started + status.deferred
    return status.reachable and waiting == 0  # the outbox: jobs on their way to Redis


def left_in_queue(stack: Stack) -> str:
    """What keeps the queue from being idle: counts, and each waiting job with its parents."""
    queue = stack.background.queue
    assert isinstance(queue, RQQueue)
    rq_queue = queue._queue
    lines = [repr(queue.status())]
    registries = {
        "queued": rq_queue.get_job_ids(),
        "started": rq_queue.started_job_registry.get_job_ids(cleanup=False),
        "deferred": rq_queue.deferred_job_registry.get_job_ids(cleanup=False),
    }
    for name, ids in registries.items():
        for job_id in ids:
            job = rq_queue.fetch_job(job_id.split(":", 1)[0])
            if job is None:
                lines.append(f"{name}: {job_id} (no job hash)")
                continue
            parents = [f"{d.id}={d.get_status(refresh=True)}" for d in job.fetch_dependencies()]
            lines.append(f"{name}: {job_id} status={job.get_status()} parents={parents}")
    return "\n".join(lines)


async def wait_idle(stack: Stack, timeout: float = 60) -> None:
    try:
        await asyncio.to_thread(wait_for, lambda: idle(stack), timeout, "an idle queue")
    except AssertionError as exc:
        raise AssertionError(f"{exc}:\n{left_in_queue(stack)}") from None


def worker_log(home: Path, index: int = 0) -> str:
    return (home / f"worker-{index}.log").read_text(errors="replace")


def waiting_for_jobs(server: RedisServer, workers: int = 1) -> bool:
    """True while ``workers`` workers block on the queue (between jobs, nothing half done)."""
    clients = redis.Redis.from_url(server.url).client_list()
    return sum(c.get("cmd") in ("blpop", "blmove") for c in clients) >= workers


def reconnect_waits(home: Path) -> list[int]:
    """The waits the worker announced after failing to reach Redis, from its log."""
    found = re.findall(r"could not connect to Redis.* retrying in (\d+) seconds", worker_log(home))
    return [int(wait) for wait in found]


def echo(body: dict[str, Any]) -> str:
    users = [m for m in body["messages"] if m["role"] == "user"]
    text = users[-1]["content"] if users else ""
    return f"answer to {str(text).split(chr(10))[0]}"


async def test_twenty_sessions_two_workers_in_order(
    redis_stack: Stack, server: FakeOpenAI, workers: ChorusWorkers, redis_server: RedisServer
) -> None:
    home = redis_stack.settings.home
    server.responder(echo)
    workers.start()
    workers.start()
    await asyncio.to_thread(
        wait_for, lambda: waiting_for_jobs(redis_server, 2), 60, "both workers waiting"
    )
    agents = [await redis_stack.agent(f"s{i:02d}", f"slack:U{i}") for i in range(20)]
    for turn in range(1, 4):
        for agent in agents:
            answer = await agent.run_turn(f"{agent.session.session_id} turn {turn}")
            assert answer == f"answer to {agent.session.session_id} turn {turn}"
    await asyncio.to_thread(
        wait_for, lambda: len(entries(home, "sync_turn")) >= 60, 120, "60 synced turns"
    )
    await wait_idle(redis_stack)
    synced = entries(home, "sync_turn")
    assert len(synced) == 60
    for agent in agents:
        sid = agent.session.session_id
        mine = [e["user"] for e in synced if e["session"] == sid]
        assert mine == [f"{sid} turn {n}" for n in (1, 2, 3)]
    background_inits = [e for e in entries(home, "initialize") if e["context"] == "background"]
    assert {e["kwargs"]["user_key"] for e in background_inits} == {f"slack:U{i}" for i in range(20)}
    # jobs run in the workers themselves (no fork per job); which of the two takes
    # which job is rq's business (a worker finishing one may take the next at once)
    worker_pids = {e["pid"] for e in synced}
    assert worker_pids <= {p.pid for p in workers.procs}


async def test_worker_killed_mid_job_is_retried_once(
    redis_stack: Stack, server: FakeOpenAI, workers: ChorusWorkers, tmp_path: Path
) -> None:
    home = redis_stack.settings.home
    gate = tmp_path / "gate"
    set_behaviour(home, block_sync_until=str(gate))
    worker = workers.start()
    agent = await redis_stack.agent("killme")
    server.reply("ok")
    assert await agent.run_turn("remember the kill") == "ok"
    await asyncio.to_thread(wait_for, lambda: entries(home, "sync_start"), 60, "sync start")
    assert entries(home, "sync_start")[0]["pid"] == worker.pid
    workers.kill(worker)
    gate.touch()
    workers.start()  # it finds the dead worker's job once its liveness has expired
    await asyncio.to_thread(wait_for, lambda: entries(home, "sync_turn"), 60, "the retried sync")
    await wait_idle(redis_stack)
    # a duplicate enqueue of the same turn is harmless too
    redis_stack.background.scheduler.sync_turn("killme", 1)
    await wait_idle(redis_stack)
    assert [e["user"] for e in entries(home, "sync_turn")] == ["remember the kill"]
    assert len(entries(home, "sync_start")) >= 2


async def test_redis_outage_loses_nothing(
    redis_stack: Stack, server: FakeOpenAI, workers: ChorusWorkers, redis_server: RedisServer
) -> None:
    home = redis_stack.settings.home
    server.responder(echo)
    workers.start()
    agent = await redis_stack.agent("outage")
    await agent.run_turn("before")
    await asyncio.to_thread(wait_for, lambda: entries(home, "sync_turn"), 60, "first sync")
    await wait_idle(redis_stack)
    await asyncio.to_thread(
        wait_for, lambda: waiting_for_jobs(redis_server), 60, "the worker waiting for jobs"
    )

    redis_server.stop()
    for text in ("during one", "during two", "during three"):
        assert await agent.run_turn(text) == f"answer to {text}"
    status = redis_stack.background.queue.status()
    assert not status.reachable
    assert status.outbox >= 3
    # Redis stays away until rq's doubling reconnect wait (1, 2, 4, 8 … 60 s) reaches
    # the cap: the worker then retries every RECONNECT_MAX_SECONDS, never later.
    cap = int(RECONNECT_MAX_SECONDS)
    await asyncio.to_thread(
        wait_for, lambda: max(reconnect_waits(home), default=0) >= cap, 60, "a capped wait"
    )
    assert max(reconnect_waits(home)) == cap

    redis_server.start()
    queue = redis_stack.background.queue
    assert isinstance(queue, RQQueue)
    await asyncio.to_thread(
        wait_for, lambda: queue.drain_outbox() >= 0 and queue.status().outbox == 0, 60, "drain"
    )
    await asyncio.to_thread(
        wait_for, lambda: len(entries(home, "sync_turn")) >= 4, 90, "all syncs after the outage"
    )
    await wait_idle(redis_stack)
    assert [e["user"] for e in entries(home, "sync_turn")] == [
        "before",
        "during one",
        "during two",
        "during three",
    ]


async def test_end_session_through_redis_runs_once(
    redis_stack: Stack, server: FakeOpenAI, workers: ChorusWorkers
) -> None:
    home = redis_stack.settings.home
    workers.start()
    agent = await redis_stack.agent("bye")
    server.reply("hello")
    await agent.run_turn("hi there")
    await wait_idle(redis_stack)
    server.tool_call("memory", {"action": "add", "target": "user", "content": "Says hi there"})
    redis_stack.background.scheduler.end_session("bye", "idle")
    redis_stack.background.scheduler.end_session("bye", "idle")
    await asyncio.to_thread(wait_for, lambda: entries(home, "on_session_end"), 60, "session end")
    await wait_idle(redis_stack)
    assert len(entries(home, "on_session_end")) == 1
    record = await redis_stack.db.get_session("bye")
    assert record is not None and record.end_reason == "idle"
    assert agent.store.user_entries == []  # the live agent's view is not reloaded
    agent.store.load_from_disk()
    assert agent.store.user_entries == ["Says hi there"]


async def test_one_worker_keeps_up_with_twenty_busy_users(
    redis_stack: Stack, server: FakeOpenAI, workers: ChorusWorkers
) -> None:
    """A soak: 20 users talking for 30 s, each about once a second (every turn a sync and
    a prefetch job, every 5th a session end with its memory flush), on one worker. The
    queue never builds up: it is empty seconds after the last message (figure printed)."""
    server.responder(echo)
    workers.start()
    agents = {u: await redis_stack.agent(f"soak-{u}-0", user_key=f"slack:U{u}") for u in range(20)}
    deadline = time.monotonic() + 30
    turns = 0

    async def talk(user: int) -> None:
        nonlocal turns
        rounds = 0
        while time.monotonic() < deadline:
            agent = agents[user]
            await agent.run_turn(f"message {rounds} from {user}")
            turns += 1
            rounds += 1
            if rounds % 5 == 0:
                redis_stack.background.scheduler.end_session(agent.session.session_id, "new")
                await agent.close()
                agents[user] = await redis_stack.agent(
                    f"soak-{user}-{rounds}", user_key=f"slack:U{user}"
                )
            await asyncio.sleep(1.0)

    await asyncio.gather(*(talk(u) for u in range(20)))
    stopped = time.monotonic()
    await asyncio.to_thread(wait_for, lambda: idle(redis_stack), 30, "an empty queue")
    drained = time.monotonic() - stopped
    print(f"\nsoak: {turns} turns from 20 users; the queue was empty {drained:.1f}s after")
    home = redis_stack.settings.home
    assert len(entries(home, "sync_turn")) == turns  # each turn synced once
    assert redis_stack.background.queue.status().failed == 0


async def test_redis_lost_while_a_job_ends_the_worker_lives_on(
    redis_stack: Stack,
    server: FakeOpenAI,
    workers: ChorusWorkers,
    redis_server: RedisServer,
    tmp_path: Path,
) -> None:
    """rq quits its loop when recording a job's end fails; the worker process does not."""
    home = redis_stack.settings.home
    gate = tmp_path / "gate"
    set_behaviour(home, block_sync_until=str(gate))
    server.responder(echo)
    worker = workers.start()
    agent = await redis_stack.agent("midjob")
    await agent.run_turn("first")
    await asyncio.to_thread(wait_for, lambda: entries(home, "sync_start"), 60, "sync start")
    redis_server.stop()
    gate.touch()  # the job ends while Redis is away: rq cannot record its end
    await asyncio.to_thread(wait_for, lambda: entries(home, "sync_turn"), 60, "the sync's end")
    await asyncio.to_thread(
        wait_for, lambda: "lost Redis" in worker_log(home), 60, "the worker noticing"
    )
    assert worker.poll() is None
    redis_server.start()
    assert await agent.run_turn("second") == "answer to second"
    await asyncio.to_thread(
        wait_for, lambda: len(entries(home, "sync_turn")) >= 2, 60, "a sync after Redis is back"
    )
    assert worker.poll() is None
    assert entries(home, "sync_turn")[-1]["user"] == "second"
    assert {e["pid"] for e in entries(home, "sync_turn")} == {worker.pid}
    # the quit worker's command listener is gone: it does not reconnect beside the new one
    conn = redis.Redis.from_url(redis_server.url)
    listeners = []
    for _ in range(30):
        listeners.append(len(conn.pubsub_channels("rq:pubsub:*")))
        await asyncio.sleep(0.1)
    assert set(listeners) == {1}


def flushed(home: Path) -> list[str]:
    return [turn for e in entries(home, "flushed") for turn in e["turns"]]


async def turns(agent: Agent, server: FakeOpenAI, *texts: str) -> None:
    for text in texts:
        server.reply(f"answer to {text}")
        await agent.run_turn(text)


async def test_a_buffering_provider_keeps_its_buffer_from_one_job_to_the_next(
    redis_stack: Stack, server: FakeOpenAI, workers: ChorusWorkers
) -> None:
    home = redis_stack.settings.home
    set_behaviour(home, buffer=True)
    worker = workers.start()
    agent = await redis_stack.agent("buf")
    await turns(agent, server, "one", "two", "three")
    await wait_idle(redis_stack)
    assert [e["size"] for e in entries(home, "buffered")] == [1, 2, 3]  # one instance, kept
    redis_stack.background.scheduler.end_session("buf", "idle")
    await asyncio.to_thread(wait_for, lambda: entries(home, "flushed"), 60, "the flush")
    assert entries(home, "flushed")[0]["why"] == "session end"
    assert flushed(home) == ["one", "two", "three"]
    background = [e for e in entries(home, "initialize") if e["context"] == "background"]
    assert {e["pid"] for e in background} == {worker.pid}
    assert len(background) == 1
    # the session's provider was shut down when the session ended
    await asyncio.to_thread(wait_for, lambda: entries(home, "shutdown"), 60, "its shutdown")


async def test_a_worker_that_stops_shuts_its_providers_down_and_nothing_is_lost(
    redis_stack: Stack, server: FakeOpenAI, workers: ChorusWorkers
) -> None:
    home = redis_stack.settings.home
    set_behaviour(home, buffer=True)
    first = workers.start()
    agent = await redis_stack.agent("restart")
    await turns(agent, server, "one", "two")
    await wait_idle(redis_stack)
    first.send_signal(signal.SIGTERM)
    assert first.wait(timeout=30) == 0
    assert [e["why"] for e in entries(home, "flushed")] == ["shutdown"]
    workers.start()
    await turns(agent, server, "three")
    redis_stack.background.scheduler.end_session("restart", "idle")
    await asyncio.to_thread(wait_for, lambda: len(entries(home, "flushed")) == 2, 60, "flush")
    assert flushed(home) == ["one", "two", "three"]


async def test_a_killed_worker_loses_no_turn_of_a_provider_that_keeps_a_journal(
    redis_stack: Stack, server: FakeOpenAI, workers: ChorusWorkers
) -> None:
    home = redis_stack.settings.home
    set_behaviour(home, buffer=True)
    doomed = workers.start()
    agent = await redis_stack.agent("kill9")
    await turns(agent, server, "one", "two")
    await wait_idle(redis_stack)
    workers.kill(doomed)  # SIGKILL: no shutdown, the in-memory buffer is gone
    assert entries(home, "flushed") == []
    workers.start()
    await turns(agent, server, "three")
    await wait_idle(redis_stack)
    assert entries(home, "recovered")[0]["turns"] == ["one", "two"]
    redis_stack.background.scheduler.end_session("kill9", "idle")
    await asyncio.to_thread(wait_for, lambda: entries(home, "flushed"), 60, "the flush")
    assert flushed(home) == ["one", "two", "three"]  # each once, in order

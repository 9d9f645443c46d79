"""A hung Redis (SIGSTOP) never delays an answer of a single gateway process.

The turn's background jobs are written to the database only; a thread hands
them to Redis, so the reply path never waits for Redis's socket timeout. Proof
by order, not by time: both answers arrive while that thread still waits for
the stopped Redis (it has not given up and logged it unreachable yet).
"""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from memory.jobs import RQQueue
from tests.fakes import FakeOpenAI
from tests.integration.recorder_plugin import install_recorder
from tests.runner.conftest import GatewayFactory

if TYPE_CHECKING:
    from tests.fakes.redis_server import RedisServer

pytest_plugins = ["tests.fakes.redis_fixtures"]


async def test_answers_arrive_while_redis_is_stopped(
    make_gateway: GatewayFactory,
    chorus_home: Path,
    server: FakeOpenAI,
    redis_server: RedisServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Redis stopped (SIGSTOP) for 2 turns (4 jobs): both answers arrive before the job
    thread gives up on Redis (0 "unreachable" lines by then; before, the first turn's
    enqueue waited for the timeout on the reply path). SIGCONT: all 4 jobs reach Redis."""
    chorus_home.mkdir(mode=0o700, exist_ok=True)
    install_recorder(chorus_home)
    gw = await make_gateway(CHORUS_REDIS__URL=redis_server.url, CHORUS_MEMORY__PROVIDER="recorder")
    queue = gw.stack.background.queue
    assert isinstance(queue, RQQueue)
    server.reply("first")
    assert (await gw.ask("hello")).text == "first"
    await gw.settle()  # the connection to Redis is open and idle
    before = queue.status().queued + queue.status().deferred

    redis_pid = _pid(redis_server)
    os.kill(redis_pid, signal.SIGSTOP)
    try:
        with caplog.at_level(logging.WARNING, logger="memory.jobs"):
            server.reply("second")
            assert (await gw.ask("are you there")).text == "second"
            server.reply("third")
            assert (await gw.ask("still there")).text == "third"
            assert "unreachable" not in caplog.text  # the job thread still waits for Redis
    finally:
        os.kill(redis_pid, signal.SIGCONT)
    await gw.settle()
    status = queue.status()  # no worker runs: the jobs wait in Redis
    assert (status.outbox, status.queued + status.deferred) == (0, before + 4)


def _pid(server: RedisServer) -> int:
    proc = server._proc
    assert proc is not None
    return proc.pid

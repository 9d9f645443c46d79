"""With Redis, a turn's background jobs run in a ``chorus worker`` process: its job
spans reach the collector linked to the turn that queued them (the trace context
travels with the job through the outbox and Redis)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.fakes import FakeOpenAI
from tests.fakes.otlp_collector import Collector, attributes, running_collector
from tests.integration.recorder_plugin import install_recorder, read_log, wait_for
from tests.runner.conftest import GatewayFactory

if TYPE_CHECKING:
    from tests.fakes.redis_server import RedisServer

pytest_plugins = ["tests.fakes.redis_fixtures"]

CHORUS = Path(sys.executable).with_name("chorus")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
async def test_a_job_in_the_worker_is_linked_to_its_turn(
    make_gateway: GatewayFactory,
    chorus_home: Path,
    server: FakeOpenAI,
    redis_server: RedisServer,
    collector: Collector,
) -> None:
    chorus_home.mkdir(mode=0o700, exist_ok=True)
    install_recorder(chorus_home)
    traced = {"CHORUS_OBSERVABILITY__OTLP_ENDPOINT": collector.url}
    gw = await make_gateway(
        CHORUS_REDIS__URL=redis_server.url, CHORUS_MEMORY__PROVIDER="recorder", **traced
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
    env |= {
        "CHORUS_HOME": str(chorus_home),
        "CHORUS_REDIS__URL": redis_server.url,
        "CHORUS_MEMORY__PROVIDER": "recorder",
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-test",
        "PYTHONPATH": str(ROOT),
        **traced,
    }
    log = (chorus_home / "worker.log").open("wb")
    worker = subprocess.Popen(
        [str(CHORUS), "worker"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        server.reply("Sure.")
        assert (await gw.ask("a question of mine")).text == "Sure."
        wait_for(lambda: any(e["hook"] == "sync_turn" for e in read_log(chorus_home)), 60)
        job = await collector.wait_for("chorus.job sync_turn")
        turn = await collector.wait_for("chorus.turn")  # the gateway sends its own batches
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(30)
        log.close()
    assert [(link.trace_id, link.span_id) for link in job.links] == [(turn.trace_id, turn.span_id)]
    assert attributes(job)["chorus.session"] == attributes(turn)["chorus.session"]
    assert b"a question of mine" not in collector.raw


@pytest.fixture
async def collector() -> AsyncIterator[Collector]:
    async with running_collector() as received:
        yield received

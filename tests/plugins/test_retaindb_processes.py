"""retaindb across processes: a kill -9 mid-burst, `chorus worker` on redis-server, setup/status."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from plugins.memory import load_memory_provider, resolve_config
from tests.fakes import FakeOpenAI, RedisServer
from tests.fakes.retaindb_server import FakeRetainDB
from tests.integration.conftest import Stack, build_stack, close_stack, stack_settings
from tests.integration.test_providers_redis import ChorusWorkers, env_for, wait_idle

pytest_plugins = ["tests.fakes.redis_fixtures"]

ROOT = Path(__file__).resolve().parents[2]
CHORUS = Path(sys.executable).with_name("chorus")
USER = "slack:U1"

BURST = r"""
import sys
import time
from pathlib import Path
from plugins.memory import load_memory_provider

home, url, key, count = Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
provider = load_memory_provider("retaindb", home)
provider.initialize("burst", chorus_home=home, platform="telegram", user_key="telegram:1",
                    agent_context="primary",
                    config={"base_url": url, "api_key": key, "timeout": 60.0})
for i in range(count):
    provider.on_memory_write("add", "user", f"write number {i:04d}")
    print(i, flush=True)  # written only once the write is committed to the queue
    time.sleep(0.005)
if len(sys.argv) > 5:
    print("left", provider.flush(60), flush=True)
"""


@pytest.fixture
def rdb() -> Iterator[FakeRetainDB]:
    with FakeRetainDB() as fake:
        yield fake


def burst(home: Path, rdb: FakeRetainDB, count: int, *finish: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", BURST, str(home), rdb.base_url, rdb.api_key, str(count), *finish],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def queued_writes(home: Path) -> list[str]:
    db = sqlite3.connect(home / "providers" / "retaindb" / "queue.db")
    rows = db.execute("SELECT payload FROM writes ORDER BY seq").fetchall()
    db.close()
    return [json.loads(row[0])["content"] for row in rows]


def test_kill_9_mid_burst_then_replay_leaves_every_write_exactly_once(
    tmp_path: Path, rdb: FakeRetainDB
) -> None:
    home = tmp_path / "home"
    # The 5th write reaches the server but its answer never comes back, so the
    # process dies with a write stored and not acknowledged: the replay must not double it.
    rdb.hold_after(5)
    child = burst(home, rdb, 100_000)
    try:
        assert child.stdout is not None
        accepted = -1
        while accepted < 30 or not rdb.holding:
            line = child.stdout.readline()
            assert line, child.stderr.read() if child.stderr else "child died"
            accepted = int(line)
        assert child.poll() is None  # still writing: the kill comes mid-burst
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=10) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
    on_server, queued = rdb.memories_of("telegram:1"), queued_writes(home)
    assert len(on_server) == 5 and queued[0] == on_server[-1]  # stored, never acknowledged
    committed = sorted(set(on_server) | set(queued))
    everything = [f"write number {i:04d}" for i in range(len(committed))]
    assert committed == everything and len(committed) > accepted  # every accepted write is kept

    rdb.release()
    replay = burst(home, rdb, 0, "flush")  # a new process starts the provider
    out, err = replay.communicate(timeout=60)
    assert replay.returncode == 0, err
    assert "left 0" in out
    assert rdb.memories_of("telegram:1") == everything  # each exactly once, in order
    # the unacknowledged write was looked up on the server, found, and not sent again
    assert sum(1 for r in rdb.requests if r[1] == "/v1/memory/search") == 1
    assert queued_writes(home) == []


@pytest.fixture
async def rdb_stack(
    chorus_home: Path, server: FakeOpenAI, redis_server: RedisServer, rdb: FakeRetainDB
) -> AsyncIterator[Stack]:
    chorus_home.mkdir(mode=0o700)
    (chorus_home / ".env").write_text(f"RETAINDB_API_KEY={rdb.api_key}\n")
    (chorus_home / ".env").chmod(0o600)
    settings = stack_settings(
        chorus_home,
        server,
        CHORUS_REDIS__URL=redis_server.url,
        CHORUS_REDIS__RETRY_INTERVALS="[0]",
        **rdb_env(rdb),
    )
    built = await build_stack(settings)
    yield built
    await close_stack(built)


def rdb_env(rdb: FakeRetainDB) -> dict[str, str]:
    return {
        "CHORUS_MEMORY__PROVIDER": "retaindb",
        "CHORUS_MEMORY__PROVIDERS__RETAINDB__BASE_URL": rdb.base_url,
        "CHORUS_MEMORY__PREFETCH_TIMEOUT": "10",
    }


def cli(home: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "RETAINDB_"))}
    clean.update({"CHORUS_HOME": str(home), "COLUMNS": "200", **env})
    return subprocess.run(
        [str(CHORUS), *args], capture_output=True, text=True, env=clean, timeout=60
    )


def recalled(server: FakeOpenAI) -> str:
    body: dict[str, Any] = server.requests[-1]
    user = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    return str(user).partition("<memory-context>")[2]


async def test_a_worker_syncs_turns_in_order_and_the_next_session_recalls(
    rdb_stack: Stack,
    chorus_home: Path,
    server: FakeOpenAI,
    redis_server: RedisServer,
    rdb: FakeRetainDB,
) -> None:
    workers = ChorusWorkers(
        chorus_home, {**env_for(chorus_home, server, redis_server, "retaindb"), **rdb_env(rdb)}
    )
    try:
        workers.start()
        agent = await rdb_stack.agent("first", USER)
        said = ["I sail a boat called Nimbus.", "Nimbus is moored in Brest.", "I sail on Sundays."]
        for text in said:
            await agent.run_turn(text)
        await wait_idle(rdb_stack, timeout=60)
        assert rdb.memories_of(USER) == [f"User: {t}\nAssistant: ok" for t in said]
        await agent.close()

        nxt = await rdb_stack.agent("second", USER)
        await nxt.run_turn("Where is my boat Nimbus moored?")
        assert "Nimbus is moored in Brest." in recalled(server)
        other = await rdb_stack.agent("other", "slack:U2")
        await other.run_turn("Where is my boat Nimbus moored?")
        assert "Brest" not in recalled(server)
        await wait_idle(rdb_stack, timeout=60)

        env = {**rdb_env(rdb), "RETAINDB_API_KEY": rdb.api_key}
        status = cli(chorus_home, env, "memory", "status")
        assert status.returncode == 0, status.stdout + status.stderr
        assert "provider: retaindb" in status.stdout and "settings: ok" in status.stdout
        assert "(background, pid" in status.stdout and "last error: none" in status.stdout

        rdb.fail(503, times=1000)  # the server breaks: the turn is still answered
        assert await nxt.run_turn("Do I sail on Sundays?") == "ok"
        await wait_idle(rdb_stack, timeout=60)
        broken = cli(chorus_home, env, "memory", "status")
        assert "last error: queue_prefetch" in broken.stdout, broken.stdout
        await nxt.close()
        await other.close()
    finally:
        workers.stop_all()


def test_setup_writes_a_config_the_provider_accepts(chorus_home: Path, rdb: FakeRetainDB) -> None:
    chorus_home.mkdir(mode=0o700)
    keyless = cli(chorus_home, {}, "memory", "setup", "retaindb", "--no-input")
    assert keyless.returncode == 1 and "RETAINDB_API_KEY) is required" in keyless.stderr
    args = ["--set", f"base_url={rdb.base_url}", "--set", f"api_key={rdb.api_key}"]
    done = cli(chorus_home, {}, "memory", "setup", "retaindb", "--no-input", *args)
    assert done.returncode == 0, done.stderr
    text = (chorus_home / "config.yaml").read_text()
    assert rdb.api_key not in text and rdb.api_key not in done.stdout
    section = yaml.safe_load(text)["memory"]
    assert section["providers"]["retaindb"] == {
        "base_url": rdb.base_url,
        "project": "default",
        "timeout": 10.0,
    }
    assert f'RETAINDB_API_KEY="{rdb.api_key}"' in (chorus_home / ".env").read_text()

    provider = load_memory_provider("retaindb", chorus_home)
    config = resolve_config(
        provider, section["providers"]["retaindb"], {"RETAINDB_API_KEY": rdb.api_key}
    )
    provider.initialize(
        "s", chorus_home=chorus_home, platform="telegram", user_key="telegram:1", config=config
    )
    assert '"success": true' in provider.handle_tool_call(
        "retaindb_remember", {"content": "The setup worked."}
    )
    assert rdb.memories_of("telegram:1") == ["The setup worked."]
    provider.shutdown()
    status = cli(chorus_home, {}, "memory", "status")
    assert status.returncode == 0 and "settings: ok" in status.stdout, status.stdout

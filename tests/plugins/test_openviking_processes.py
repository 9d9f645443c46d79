"""openviking in chorus's own processes: `chorus worker` on redis-server, setup and status."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from plugins.memory import load_memory_provider, resolve_config
from plugins.memory.openviking._ops import ov_user
from tests.fakes import FakeOpenAI, RedisServer
from tests.fakes.openviking_server import FakeOpenViking
from tests.integration.conftest import Stack, build_stack, close_stack, stack_settings
from tests.integration.recorder_plugin import wait_for
from tests.integration.test_providers_redis import ChorusWorkers, env_for, wait_idle

pytest_plugins = ["tests.fakes.redis_fixtures"]

CHORUS = Path(sys.executable).with_name("chorus")
USER = "slack:U1"


@pytest.fixture
def ov() -> Iterator[FakeOpenViking]:
    with FakeOpenViking() as fake:
        yield fake


def ov_env(ov: FakeOpenViking) -> dict[str, str]:
    return {
        "CHORUS_MEMORY__PROVIDER": "openviking",
        "CHORUS_MEMORY__PROVIDERS__OPENVIKING__BASE_URL": ov.base_url,
        "CHORUS_MEMORY__PROVIDERS__OPENVIKING__TIMEOUT": "2.0",
        "CHORUS_MEMORY__PREFETCH_TIMEOUT": "10",
    }


@pytest.fixture
async def ov_stack(
    chorus_home: Path, server: FakeOpenAI, redis_server: RedisServer, ov: FakeOpenViking
) -> AsyncIterator[Stack]:
    chorus_home.mkdir(mode=0o700)
    secrets = chorus_home / ".env"
    secrets.write_text(f"OPENVIKING_API_KEY={ov.api_key}\n")
    secrets.chmod(0o600)
    settings = stack_settings(
        chorus_home,
        server,
        CHORUS_REDIS__URL=redis_server.url,
        CHORUS_REDIS__RETRY_INTERVALS="[0]",
        **ov_env(ov),
    )
    built = await build_stack(settings)
    yield built
    await close_stack(built)


def recalled(server: FakeOpenAI) -> str:
    body: dict[str, Any] = server.requests[-1]
    user = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    return str(user).partition("<memory-context>")[2]


def cli(home: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENVIKING_"))}
    clean.update({"CHORUS_HOME": str(home), "COLUMNS": "200", **env})
    return subprocess.run(
        [str(CHORUS), *args], capture_output=True, text=True, env=clean, timeout=60
    )


async def test_a_worker_batches_commits_at_session_end_and_the_next_session_recalls(
    ov_stack: Stack,
    chorus_home: Path,
    server: FakeOpenAI,
    redis_server: RedisServer,
    ov: FakeOpenViking,
) -> None:
    env = {**env_for(chorus_home, server, redis_server, "openviking"), **ov_env(ov)}
    workers = ChorusWorkers(chorus_home, env)
    try:
        workers.start()
        agent = await ov_stack.agent("first", USER)
        said = ["I sail a boat called Nimbus.", "Nimbus is moored in Brest.", "I sail on Sundays."]
        for text in said:
            await agent.run_turn(text)
        await wait_idle(ov_stack, timeout=60)
        assert ov.commits == []  # batched on disk until the session ends
        ov_stack.background.scheduler.end_session("first", "idle")
        await agent.close()
        await asyncio.to_thread(wait_for, lambda: len(ov.commits) == 1, 60, "the commit")
        user, _, messages = ov.commits[0]
        assert user == ov_user(USER)
        assert [m["content"] for m in messages if m["role"] == "user"] == said
        assert [m["role"] for m in messages] == ["user", "assistant"] * 3

        nxt = await ov_stack.agent("second", USER)
        await nxt.run_turn("Where is my boat Nimbus moored?")
        assert "Nimbus is moored in Brest." in recalled(server)
        other = await ov_stack.agent("other", "slack:U2")
        await other.run_turn("Where is my boat Nimbus moored?")
        assert "Brest" not in recalled(server)
        await wait_idle(ov_stack, timeout=60)

        status_env = {**ov_env(ov), "OPENVIKING_API_KEY": ov.api_key}
        status = cli(chorus_home, status_env, "memory", "status")
        assert status.returncode == 0, status.stdout + status.stderr
        assert "provider: openviking" in status.stdout and "settings: ok" in status.stdout
        assert "(background, pid" in status.stdout and "last error: none" in status.stdout

        ov.fail(503, times=1000)  # the server breaks: the turn is still answered
        assert await nxt.run_turn("Do I sail on Sundays?") == "ok"
        await wait_idle(ov_stack, timeout=60)
        broken = cli(chorus_home, status_env, "memory", "status")
        assert "last error: queue_prefetch" in broken.stdout, broken.stdout
        assert ov.api_key not in broken.stdout
        await nxt.close()
        await other.close()
    finally:
        workers.stop_all()


def test_setup_writes_a_config_the_provider_accepts(chorus_home: Path, ov: FakeOpenViking) -> None:
    chorus_home.mkdir(mode=0o700)
    missing = cli(
        chorus_home, {}, "memory", "setup", "openviking", "--set", "timeout=-", "--no-input"
    )
    assert missing.returncode == 1 and "timeout" in missing.stderr
    done = cli(
        chorus_home,
        {},
        "memory",
        "setup",
        "openviking",
        "--no-input",
        "--set",
        f"base_url={ov.base_url}",
        "--set",
        f"api_key={ov.api_key}",
        "--set",
        "timeout=3",
    )
    assert done.returncode == 0, done.stderr
    assert "available: yes" in done.stdout and ov.api_key not in done.stdout
    text = (chorus_home / "config.yaml").read_text()
    assert ov.api_key not in text
    section = yaml.safe_load(text)["memory"]
    assert section["provider"] == "openviking"
    assert section["providers"]["openviking"] == {"base_url": ov.base_url, "timeout": 3.0}
    assert f'OPENVIKING_API_KEY="{ov.api_key}"' in (chorus_home / ".env").read_text()

    provider = load_memory_provider("openviking", chorus_home)
    env = {"OPENVIKING_API_KEY": ov.api_key}
    config = resolve_config(provider, section["providers"]["openviking"], env)
    provider.initialize(
        "s", chorus_home=chorus_home, platform="telegram", user_key="telegram:1", config=config
    )
    assert '"success": true' in provider.handle_tool_call(
        "viking_remember", {"content": "The setup worked."}
    )
    assert ov.memories_of(ov_user("telegram:1")) == ["The setup worked."]
    provider.shutdown()
    status = cli(chorus_home, {}, "memory", "status")
    assert status.returncode == 0 and "settings: ok" in status.stdout, status.stdout

"""``memory.provider: hindsight`` on the gateway's stack with `chorus worker` processes on Redis,
and ``chorus memory setup``/``status`` as an operator runs them.

A worker buffers each turn on disk; a worker killed between turns loses none;
the session end retains the session as one document, in order; the next
session's recall, asked in the gateway process, finds it. With Hindsight
failing, turns are still answered and ``chorus memory status`` shows the error.
"""

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
from tests.fakes import FakeOpenAI, RedisServer
from tests.fakes.hindsight_server import FakeHindsight
from tests.integration.conftest import Stack, build_stack, close_stack, stack_settings
from tests.integration.recorder_plugin import wait_for
from tests.integration.test_providers_redis import ChorusWorkers, env_for, wait_idle

pytest_plugins = ["tests.fakes.redis_fixtures"]

CHORUS = Path(sys.executable).with_name("chorus")
BANK = "chorus-telegram_3a1"


@pytest.fixture
def hindsight() -> Iterator[FakeHindsight]:
    with FakeHindsight() as fake:
        yield fake


def provider_env(hindsight: FakeHindsight) -> dict[str, str]:
    return {
        "CHORUS_MEMORY__PROVIDER": "hindsight",
        "CHORUS_MEMORY__PROVIDERS__HINDSIGHT__BASE_URL": hindsight.base_url,
        "CHORUS_MEMORY__PREFETCH_TIMEOUT": "10",  # recall is asserted, not raced
    }


@pytest.fixture
async def hs_stack(
    chorus_home: Path, server: FakeOpenAI, redis_server: RedisServer, hindsight: FakeHindsight
) -> AsyncIterator[Stack]:
    chorus_home.mkdir(mode=0o700)
    secrets = chorus_home / ".env"  # the API key, as an operator sets it
    secrets.write_text(f"HINDSIGHT_API_KEY={hindsight.api_key}\n")
    secrets.chmod(0o600)
    settings = stack_settings(
        chorus_home,
        server,
        CHORUS_REDIS__URL=redis_server.url,
        CHORUS_REDIS__RETRY_INTERVALS="[0]",
        **provider_env(hindsight),
    )
    built = await build_stack(settings)
    yield built
    await close_stack(built)


@pytest.fixture
def hs_workers(
    chorus_home: Path, server: FakeOpenAI, redis_server: RedisServer, hindsight: FakeHindsight
) -> Iterator[ChorusWorkers]:
    env = {**env_for(chorus_home, server, redis_server, "hindsight"), **provider_env(hindsight)}
    env = {k: v for k, v in env.items() if not k.startswith("HINDSIGHT_")}
    pool = ChorusWorkers(chorus_home, env)
    yield pool
    pool.stop_all()


def recalled(server: FakeOpenAI) -> str:
    """The recalled memory the agent's last request carried."""
    for body in reversed(server.requests):
        request: dict[str, Any] = body
        if any(t["function"]["name"] == "hindsight_recall" for t in request.get("tools") or []):
            user = [m for m in request["messages"] if m["role"] == "user"][-1]["content"]
            return str(user).partition("<memory-context>")[2]
    raise AssertionError("no agent request seen")


def run(home: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "HINDSIGHT_"))}
    env.update({"CHORUS_HOME": str(home), "COLUMNS": "200", **extra})
    return subprocess.run([str(CHORUS), *args], capture_output=True, text=True, env=env, timeout=60)


async def test_a_killed_worker_loses_no_turn_and_the_next_session_recalls_it(
    hs_stack: Stack, server: FakeOpenAI, hs_workers: ChorusWorkers, hindsight: FakeHindsight
) -> None:
    doomed = hs_workers.start()
    agent = await hs_stack.agent("first")
    await agent.run_turn("I keep bees in the garden.")
    await agent.run_turn("My sister Anna lives in Lisbon.")
    await wait_idle(hs_stack, timeout=60)
    hs_workers.kill(doomed)  # SIGKILL between jobs: nothing in memory survives
    assert hindsight.calls("retain") == []  # buffered, not sent yet
    hs_workers.start()
    await agent.run_turn("I play the cello on Sundays.")
    await wait_idle(hs_stack, timeout=60)
    hs_stack.background.scheduler.end_session("first", "idle")
    await asyncio.to_thread(wait_for, lambda: hindsight.calls("retain"), 60, "the retain")
    await wait_idle(hs_stack, timeout=60)
    [(bank, body)] = hindsight.calls("retain")
    users = [line for line in body["items"][0]["content"].splitlines() if line.startswith("User")]
    assert bank == BANK and body["items"][0]["document_id"] == "chorus-first-1"
    assert users == [
        "User: I keep bees in the garden.",
        "User: My sister Anna lives in Lisbon.",
        "User: I play the cello on Sundays.",
    ]

    later = await hs_stack.agent("second")
    await later.run_turn("Where does my sister Anna live?")
    memory = recalled(server)
    assert "Anna lives in Lisbon" in memory and "bees" not in memory
    assert {b for b, _ in hindsight.calls("recall")} == {BANK}


async def test_with_hindsight_failing_the_turn_is_answered_and_status_shows_it(
    hs_stack: Stack, server: FakeOpenAI, hs_workers: ChorusWorkers, hindsight: FakeHindsight
) -> None:
    hs_workers.start()
    hindsight.fail(500, times=1000)
    agent = await hs_stack.agent("down")
    server.reply("Hello there!")
    reply = await agent.run_turn("hi, I keep bees")
    assert "Hello there!" in str(reply)
    await wait_idle(hs_stack, timeout=60)
    status = run(hs_stack.settings.home, "memory", "status", **provider_env(hindsight))
    assert "provider: hindsight" in status.stdout and "settings: ok" in status.stdout
    assert "last error: queue_prefetch: BackendFailed" in status.stdout, status.stdout


def test_setup_writes_a_config_the_provider_accepts_and_status_reports_it(
    chorus_home: Path, hindsight: FakeHindsight
) -> None:
    chorus_home.mkdir(mode=0o700)
    done = run(
        chorus_home,
        "memory",
        "setup",
        "hindsight",
        "--no-input",
        "--set",
        f"base_url={hindsight.base_url}",
        "--set",
        f"api_key={hindsight.api_key}",
        "--set",
        "bank_prefix=team",
        "--set",
        "recall_budget=low",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "wrote HINDSIGHT_API_KEY" in done.stdout and "available: yes" in done.stdout
    config = yaml.safe_load((chorus_home / "config.yaml").read_text())
    section = config["memory"]["providers"]["hindsight"]
    assert config["memory"]["provider"] == "hindsight"
    assert section["base_url"] == hindsight.base_url and section["bank_prefix"] == "team"
    assert "api_key" not in section and str(hindsight.api_key) not in yaml.safe_dump(config)
    env_file = (chorus_home / ".env").read_text()
    assert f'HINDSIGHT_API_KEY="{hindsight.api_key}"' in env_file

    provider = load_memory_provider("hindsight", chorus_home)
    resolved = resolve_config(provider, section, {"HINDSIGHT_API_KEY": str(hindsight.api_key)})
    provider.initialize(
        "s", chorus_home=chorus_home, platform="telegram", user_key="telegram:1", config=resolved
    )
    assert '"success": true' in provider.handle_tool_call("hindsight_recall", {"query": "bees"})
    [(bank, body)] = hindsight.calls("recall")
    assert bank == "team-telegram_3a1" and body["budget"] == "low"

    status = run(chorus_home, "memory", "status")
    assert status.returncode == 0, status.stdout
    assert "provider: hindsight" in status.stdout and "available: yes" in status.stdout
    assert "settings: ok" in status.stdout and "last error: none" in status.stdout

    config["memory"]["providers"]["hindsight"]["api_key"] = "hs-leaked"
    (chorus_home / "config.yaml").write_text(yaml.safe_dump(config))
    refused = run(chorus_home, "memory", "status")
    assert refused.returncode == 1
    assert "api_key is a secret" in refused.stdout and "hs-leaked" not in refused.stdout

"""Supermemory as an operator runs it: `chorus memory setup`, `status`, `doctor`, `chorus worker`.

The worker test runs the real stack on a real redis-server with `chorus worker`
processes against FakeSupermemory: turns are buffered by the worker, the
worker is killed with SIGKILL mid-session, another worker takes over, and the
session end ingests every turn once and in order; the next session recalls it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import yaml

from gateway.config import load_settings, secrets_environment
from plugins.memory import load_memory_provider, resolve_config
from plugins.memory.supermemory._tags import container_tag
from tests.fakes import FakeOpenAI, RedisServer
from tests.fakes.supermemory_server import FakeSupermemory
from tests.integration.conftest import Stack, build_stack, close_stack, stack_settings
from tests.integration.recorder_plugin import wait_for
from tests.integration.test_providers_redis import ChorusWorkers, env_for, turns, wait_idle

pytest_plugins = ["tests.fakes.redis_fixtures"]

CHORUS = Path(sys.executable).with_name("chorus")


@pytest.fixture
def sm() -> Iterator[FakeSupermemory]:
    with FakeSupermemory() as fake:
        yield fake


def run(home: Path, *args: str, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "SUPERMEMORY_"))}
    env.update({"CHORUS_HOME": str(home), "COLUMNS": "200"})
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run([str(CHORUS), *args], capture_output=True, text=True, env=env, timeout=60)


def test_without_the_sdk_setup_status_and_doctor_say_to_install_the_extra(
    chorus_home: Path, tmp_path: Path
) -> None:
    hide = tmp_path / "hide-sdk"
    hide.mkdir()
    # started before chorus: the supermemory SDK does not import, as when it is not installed
    (hide / "sitecustomize.py").write_text('import sys\nsys.modules["supermemory"] = None\n')
    hint = "pip install 'chorus[supermemory]'"
    done = run(
        chorus_home,
        *("memory", "setup", "supermemory", "--set", "api_key=sm-k", "--no-input"),
        pythonpath=hide,
    )
    assert done.returncode == 0, done.stderr
    assert "available: no" in done.stdout and hint in done.stdout
    status = run(chorus_home, "memory", "status", pythonpath=hide)
    assert status.returncode == 1 and hint in status.stdout
    doctor = run(chorus_home, "doctor", pythonpath=hide)
    [line] = [x for x in doctor.stdout.splitlines() if "provider:" in x]
    assert "FAIL" in line and "supermemory SDK" in line and hint in line
    assert "available: yes" in run(chorus_home, "memory", "status").stdout


def test_setup_writes_a_config_the_provider_accepts_and_status_reports_it(
    chorus_home: Path, sm: FakeSupermemory
) -> None:
    missing = run(chorus_home, "memory", "setup", "supermemory", "--no-input")
    assert missing.returncode == 1 and "SUPERMEMORY_API_KEY) is required" in missing.stderr

    done = run(
        chorus_home,
        "memory",
        "setup",
        "supermemory",
        "--set",
        f"base_url={sm.base_url}",
        "--set",
        "timeout=4",
        "--set",
        f"api_key={sm.api_key}",
        "--no-input",
    )
    assert done.returncode == 0, done.stderr
    assert "available: yes" in done.stdout and sm.api_key not in done.stdout
    config_text = (chorus_home / "config.yaml").read_text(encoding="utf-8")
    assert sm.api_key not in config_text
    section = yaml.safe_load(config_text)["memory"]
    assert section["provider"] == "supermemory"
    assert section["providers"]["supermemory"] == {"base_url": sm.base_url, "timeout": 4.0}
    assert f'SUPERMEMORY_API_KEY="{sm.api_key}"' in (chorus_home / ".env").read_text()

    cfg = load_settings(chorus_home, {"CHORUS_HOME": str(chorus_home)})
    provider = load_memory_provider("supermemory", chorus_home)
    resolved = resolve_config(
        provider, cfg.memory.providers["supermemory"], secrets_environment(chorus_home)
    )
    provider.initialize(
        "s1",
        chorus_home=chorus_home,
        platform="telegram",
        user_key="telegram:1",
        agent_context="primary",
        config=resolved,
    )
    stored = json.loads(provider.handle_tool_call("supermemory_store", {"content": "Likes tea."}))
    assert stored["success"], stored
    provider.shutdown()
    assert sm.memories_of(container_tag("telegram:1")) == ["Likes tea."]

    status = run(chorus_home, "memory", "status")
    assert status.returncode == 0, status.stdout
    assert "provider: supermemory" in status.stdout and "available: yes" in status.stdout
    assert "settings: ok" in status.stdout

    (chorus_home / ".env").write_text("OTHER=1\n", encoding="utf-8")
    broken = run(chorus_home, "memory", "status")
    assert broken.returncode == 1 and "SUPERMEMORY_API_KEY) is required" in broken.stdout


# -- a real worker on a real Redis -------------------------------------------


def supermemory_env(sm: FakeSupermemory) -> dict[str, str]:
    return {
        "CHORUS_MEMORY__PROVIDER": "supermemory",
        "CHORUS_MEMORY__PROVIDERS__SUPERMEMORY__BASE_URL": sm.base_url,
        "CHORUS_MEMORY__PREFETCH_TIMEOUT": "10",  # recall is asserted, not raced
    }


@pytest.fixture
async def sm_stack(
    chorus_home: Path, server: FakeOpenAI, redis_server: RedisServer, sm: FakeSupermemory
) -> AsyncIterator[Stack]:
    chorus_home.mkdir(mode=0o700)
    secrets = chorus_home / ".env"
    secrets.write_text(f"SUPERMEMORY_API_KEY={sm.api_key}\n")
    secrets.chmod(0o600)
    settings = stack_settings(
        chorus_home,
        server,
        CHORUS_REDIS__URL=redis_server.url,
        CHORUS_REDIS__RETRY_INTERVALS="[0]",
        **supermemory_env(sm),
    )
    built = await build_stack(settings)
    yield built
    await close_stack(built)


@pytest.fixture
def sm_workers(
    chorus_home: Path, server: FakeOpenAI, redis_server: RedisServer, sm: FakeSupermemory
) -> Iterator[ChorusWorkers]:
    env = {**env_for(chorus_home, server, redis_server, "supermemory"), **supermemory_env(sm)}
    pool = ChorusWorkers(chorus_home, env)
    yield pool
    pool.stop_all()


async def test_worker_buffers_turns_durably_and_ingests_them_at_session_end(
    sm_stack: Stack, server: FakeOpenAI, sm_workers: ChorusWorkers, sm: FakeSupermemory
) -> None:
    doomed = sm_workers.start()
    agent = await sm_stack.agent("sess-1", "telegram:7")
    await turns(agent, server, "I grow basil on the balcony.", "My bike is green.")
    await wait_idle(sm_stack, timeout=60)
    assert "POST /v4/conversations" not in sm.paths()  # buffered, not sent
    sm_workers.kill(doomed)  # SIGKILL: only what is on disk survives
    sm_workers.start()
    await turns(agent, server, "I run on Sundays.")
    sm_stack.background.scheduler.end_session("sess-1", "idle")
    tag = container_tag("telegram:7")
    await asyncio.to_thread(wait_for, lambda: sm.memories_of(tag), 60, "the session memory")
    await wait_idle(sm_stack, timeout=60)
    said = ["I grow basil on the balcony.", "My bike is green.", "I run on Sundays."]
    [conversation] = sm.conversations_of(tag)
    assert conversation["messages"] == [
        {"role": role, "content": text if role == "user" else f"answer to {text}"}
        for text in said
        for role in ("user", "assistant")
    ]
    assert sm.memories_of(tag) == said
    assert sm.memories_of(container_tag("telegram:8")) == []

    nxt = await sm_stack.agent("sess-2", "telegram:7")
    server.reply("fine")
    await nxt.run_turn("Where do I grow basil?")
    last_user = [m for m in server.requests[-1]["messages"] if m["role"] == "user"][-1]
    assert "grow basil on the balcony" in str(last_user["content"])
    other = await sm_stack.agent("sess-3", "telegram:8")
    server.reply("fine")
    await other.run_turn("Where do I grow basil?")
    last_user = [m for m in server.requests[-1]["messages"] if m["role"] == "user"][-1]
    assert "balcony" not in str(last_user["content"])

"""ByteRover as an operator runs it: ``chorus memory setup``/``status``, and ``chorus worker``.

The fake ``brv`` is first on the ``PATH`` of every process. The worker test
runs the real stack on a real redis-server with a `chorus worker` process:
the worker curates each turn into the speaker's own working directory, in
order, and the next session's recall (asked in this process) finds it.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import yaml

from gateway.config import load_settings, secrets_environment
from plugins.memory import load_memory_provider, resolve_config
from tests.fakes import FakeOpenAI, RedisServer
from tests.fakes.byterover_brv import calls, entries, install_fake_brv, path_with
from tests.integration.conftest import Stack, build_stack, close_stack, stack_settings
from tests.integration.recorder_plugin import wait_for
from tests.integration.test_providers_redis import ChorusWorkers, env_for, turns, wait_idle

pytest_plugins = ["tests.fakes.redis_fixtures"]

CHORUS = Path(sys.executable).with_name("chorus")


@pytest.fixture
def brv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = install_fake_brv(tmp_path / "bin")
    monkeypatch.setenv("PATH", path_with(directory))
    return directory


def workdir(home: Path, user_key: str) -> Path:
    platform, _, ident = user_key.partition(":")
    return home / "providers" / "byterover" / "users" / platform / ident


def run(home: Path, *args: str, path: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "BRV_"))}
    env.update({"CHORUS_HOME": str(home), "COLUMNS": "200", "PATH": path})
    return subprocess.run([str(CHORUS), *args], capture_output=True, text=True, env=env, timeout=60)


def test_setup_writes_a_config_the_provider_accepts_and_status_reports_it(
    chorus_home: Path, brv: Path
) -> None:
    path = os.environ["PATH"]
    done = run(
        chorus_home, "memory", "setup", "byterover", "--set", "timeout=12", "--no-input", path=path
    )
    assert done.returncode == 0, done.stderr
    assert "available: yes" in done.stdout
    section = yaml.safe_load((chorus_home / "config.yaml").read_text(encoding="utf-8"))["memory"]
    assert section == {
        "provider": "byterover",
        "providers": {"byterover": {"binary": "brv", "timeout": 12.0, "prefetch_timeout": 5.0}},
    }

    cfg = load_settings(chorus_home, {"CHORUS_HOME": str(chorus_home)})
    provider = load_memory_provider("byterover", chorus_home)
    resolved = resolve_config(
        provider, cfg.memory.providers["byterover"], secrets_environment(chorus_home)
    )
    provider.initialize(
        "s1",
        chorus_home=chorus_home,
        platform="telegram",
        user_key="telegram:1",
        agent_context="primary",
        config=resolved,
    )
    assert '"success": true' in provider.handle_tool_call("brv_curate", {"content": "Likes tea."})
    assert entries(workdir(chorus_home, "telegram:1")) == ["Likes tea."]

    status = run(chorus_home, "memory", "status", path=path)
    assert status.returncode == 0, status.stdout
    assert "provider: byterover" in status.stdout and "available: yes" in status.stdout
    assert "settings: ok" in status.stdout

    without = run(chorus_home, "memory", "status", path=str(brv.parent / "nothing-here"))
    assert without.returncode == 1
    assert "available: no" in without.stdout and "npm i -g byterover-cli" in without.stdout


# -- a real worker on a real Redis -------------------------------------------

BYTEROVER = {"CHORUS_MEMORY__PROVIDER": "byterover", "CHORUS_MEMORY__PREFETCH_TIMEOUT": "10"}


@pytest.fixture
async def brv_stack(
    chorus_home: Path, server: FakeOpenAI, redis_server: RedisServer, brv: Path
) -> AsyncIterator[Stack]:
    chorus_home.mkdir(mode=0o700)
    settings = stack_settings(
        chorus_home,
        server,
        CHORUS_REDIS__URL=redis_server.url,
        CHORUS_REDIS__RETRY_INTERVALS="[0]",
        **BYTEROVER,
    )
    built = await build_stack(settings)
    yield built
    await close_stack(built)


@pytest.fixture
def brv_workers(
    chorus_home: Path, server: FakeOpenAI, redis_server: RedisServer, brv: Path
) -> Iterator[ChorusWorkers]:
    env = {**env_for(chorus_home, server, redis_server, "byterover"), **BYTEROVER}
    env["PATH"] = os.environ["PATH"]
    pool = ChorusWorkers(chorus_home, env)
    yield pool
    pool.stop_all()


async def test_worker_curates_each_turn_in_order_into_the_users_own_tree(
    brv_stack: Stack, server: FakeOpenAI, brv_workers: ChorusWorkers, brv: Path
) -> None:
    brv_workers.start()
    agent = await brv_stack.agent("sess-1", "telegram:7")
    await turns(agent, server, "I grow basil on the balcony.", "My bike is green.")
    await asyncio.to_thread(
        wait_for, lambda: len(entries(workdir(brv_stack.settings.home, "telegram:7"))) >= 2, 60
    )
    await wait_idle(brv_stack, timeout=60)
    home = brv_stack.settings.home
    assert entries(workdir(home, "telegram:7")) == [
        "User: I grow basil on the balcony.\nAssistant: answer to I grow basil on the balcony.",
        "User: My bike is green.\nAssistant: answer to My bike is green.",
    ]
    curates = [c for c in calls(brv) if c["argv"][0] == "curate"]
    assert {c["cwd"] for c in curates} == {str(workdir(home, "telegram:7"))}

    nxt = await brv_stack.agent("sess-2", "telegram:7")
    server.reply("fine")
    await nxt.run_turn("Where do I grow basil?")
    last_user = [m for m in server.requests[-1]["messages"] if m["role"] == "user"][-1]
    assert "grow basil on the balcony" in str(last_user["content"])
    other = await brv_stack.agent("sess-3", "telegram:8")
    server.reply("fine")
    await other.run_turn("Where do I grow basil?")
    last_user = [m for m in server.requests[-1]["messages"] if m["role"] == "user"][-1]
    assert "balcony" not in str(last_user["content"])

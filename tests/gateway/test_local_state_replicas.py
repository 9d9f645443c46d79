"""A provider keeping its state in CHORUS_HOME, with ``database.url``: real processes.

Several replicas sharing PostgreSQL each have their own CHORUS_HOME (a tmpfs or
an emptyDir in the shipped deploy files): ``chorus gateway`` refuses to start
holographic (its facts) or a remote provider with a buffer on disk unless
``memory.local_state: persistent`` says the home outlives a restart, and
``chorus doctor`` reports it as a failure.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.redis_server import RedisServer
from tests.fakes.telegram_api import FakeTelegram

pytest_plugins = ["tests.fakes.postgres_fixtures", "tests.fakes.redis_fixtures"]

CHORUS = Path(sys.executable).with_name("chorus")


def environment(home: Path, url: str | None, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CHORUS_", "OPENAI_")) and k != "DATABASE_URL"
    }
    env.update({"CHORUS_HOME": str(home), "COLUMNS": "300", **extra})
    if url is not None:
        env["CHORUS_DATABASE__URL"] = url
    return env


def run(home: Path, *args: str, url: str | None, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CHORUS), *args],
        capture_output=True,
        text=True,
        env=environment(home, url, **extra),
        timeout=90,
    )


@pytest.fixture
def telegram() -> Iterator[FakeTelegram]:
    with FakeTelegram() as server:
        yield server


def platform(telegram: FakeTelegram) -> dict[str, str]:
    """Telegram (long polling) through the fake Bot API: a gateway needs one platform."""
    return {
        "TELEGRAM_BOT_TOKEN": telegram.token,
        "CHORUS_TELEGRAM__BASE_URL": telegram.base_url,
        "CHORUS_TELEGRAM__BASE_FILE_URL": telegram.base_file_url,
    }


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir(mode=0o700)
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_the_gateway_refuses_holographic_on_a_throwaway_home(
    home: Path, postgres_url: str, telegram: FakeTelegram
) -> None:
    result = run(
        home,
        "gateway",
        url=postgres_url,
        CHORUS_MEMORY__PROVIDER="holographic",
        **platform(telegram),
    )
    assert result.returncode == 2, result.stdout + result.stderr
    said = " ".join(result.stderr.split())
    assert "memory.provider holographic keeps its facts (facts.db) in CHORUS_HOME" in said
    assert "database.url" in said and "memory.local_state: persistent" in said
    assert "one persistent volume that every gateway and worker shares" in said
    password = postgres_url.split("@")[0].rsplit(":", 1)[-1]
    assert password not in result.stdout + result.stderr


def test_the_worker_refuses_a_remote_provider_with_a_buffer_on_a_throwaway_home(
    home: Path, postgres_url: str, redis_server: RedisServer
) -> None:
    env = {"CHORUS_MEMORY__PROVIDER": "supermemory", "CHORUS_REDIS__URL": redis_server.url}
    result = run(home, "worker", "--burst", url=postgres_url, **env)
    assert result.returncode == 2, result.stdout + result.stderr
    said = " ".join(result.stderr.split())
    assert "memory.provider supermemory keeps the turns it buffers until they are sent" in said
    assert "memory.local_state: persistent" in said
    declared = run(
        home, "worker", "--burst", url=postgres_url, CHORUS_MEMORY__LOCAL_STATE="persistent", **env
    )
    assert declared.returncode == 0, declared.stdout + declared.stderr


@pytest.mark.parametrize(
    ("provider", "kept"),
    [("holographic", "its facts (facts.db)"), ("hindsight", "the turns it buffers")],
)
def test_doctor_reports_a_provider_whose_state_would_be_lost(
    home: Path, postgres_url: str, provider: str, kept: str
) -> None:
    result = run(home, "doctor", url=postgres_url, CHORUS_MEMORY__PROVIDER=provider)
    assert result.returncode == 1
    [line] = [line for line in result.stdout.splitlines() if "provider:" in line]
    assert line.startswith("[FAIL] provider:")
    assert f"memory.provider {provider} keeps {kept}" in line
    assert "memory.local_state: persistent" in line
    declared = run(
        home,
        "doctor",
        url=postgres_url,
        CHORUS_MEMORY__PROVIDER=provider,
        CHORUS_MEMORY__LOCAL_STATE="persistent",
    )
    assert f"[ok  ] provider: {provider} available" in declared.stdout
    alone = run(home, "doctor", url=None, CHORUS_MEMORY__PROVIDER=provider)
    assert f"[ok  ] provider: {provider} available" in alone.stdout  # one process, its own home


def test_with_a_persistent_home_the_gateway_starts(
    home: Path, postgres_url: str, telegram: FakeTelegram
) -> None:
    port = free_port()
    env = environment(
        home,
        postgres_url,
        CHORUS_MEMORY__PROVIDER="holographic",
        CHORUS_MEMORY__LOCAL_STATE="persistent",
        CHORUS_GATEWAY__HTTP__PORT=str(port),
        **platform(telegram),
    )
    process = subprocess.Popen(
        [str(CHORUS), "gateway"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline, status = time.monotonic() + 60, 0
        while time.monotonic() < deadline and process.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
                    status = r.status
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.3)
        assert process.poll() is None, process.communicate()[1].decode()
        assert status == 200
    finally:
        process.terminate()
        process.wait(timeout=60)

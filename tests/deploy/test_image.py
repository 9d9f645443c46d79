"""deploy/Dockerfile, built and run for real with podman: a non-root image whose
``chorus gateway`` answers on Telegram and serves its probes, whose ``chorus worker``
runs the gateway's jobs from Redis, and which both stop with exit 0 on SIGTERM."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import yaml
from rq.registry import FinishedJobRegistry

from memory.paths import ChorusPaths
from memory.transcripts import SessionDB
from tests.fakes import FakeOpenAI, RedisServer
from tests.fakes.containers import ROOT, Container, build_image, compose_hardening, podman, run
from tests.fakes.telegram_api import FakeTelegram
from tests.telegram.conftest import ANN
from tests.telegram.test_telegram_process import free_port, get, wait_ready

pytest_plugins = ["tests.fakes.redis_fixtures"]
pytestmark = pytest.mark.container

IMAGE = "localhost/chorus:test"
UID = 10001


@pytest.fixture(scope="module")
def image() -> str:
    return build_image(IMAGE)


@pytest.fixture
def telegram() -> Iterator[FakeTelegram]:
    with FakeTelegram() as fake:
        yield fake


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A bind-mounted CHORUS_HOME the image's non-root user owns (mode 0700)."""
    home = tmp_path / "data"
    home.mkdir(mode=0o700)
    os.chown(home, UID, UID)
    return home


def test_the_image_runs_chorus_as_a_non_root_user(image: str) -> None:
    assert run(image, "chorus", "--version").startswith("chorus ")
    assert run(image, "id", "-u").strip() == str(UID)
    config = json.loads(podman("image", "inspect", image).stdout)[0]["Config"]
    assert config["User"] == "chorus"
    assert config["Entrypoint"][0].endswith("tini")
    assert config["Cmd"] == ["chorus", "gateway"]
    assert "8080/tcp" in config["ExposedPorts"]
    assert "/data" in config["Volumes"]
    assert not any(k.endswith(("TOKEN", "API_KEY", "SECRET")) for k in config.get("Env", []))


async def test_gateway_and_worker_containers_answer_and_stop_cleanly(
    image: str,
    data_dir: Path,
    server: FakeOpenAI,
    telegram: FakeTelegram,
    redis_server: RedisServer,
) -> None:
    port = free_port()
    env = {
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-container-test",
        "TELEGRAM_BOT_TOKEN": telegram.token,
        "CHORUS_TELEGRAM__BASE_URL": telegram.base_url,
        "CHORUS_TELEGRAM__BASE_FILE_URL": telegram.base_file_url,
        "CHORUS_AUTH__ALLOWED_USERS": f"telegram:{ANN}",
        "CHORUS_GATEWAY__HTTP__PORT": str(port),
        "CHORUS_REDIS__URL": redis_server.url,
        "CHORUS_MEMORY__FLUSH_MIN_TURNS": "1",
        "PTB_TIMEDELTA": "1",
    }
    services = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())["services"]
    hardened = {name: compose_hardening(services[name]) for name in ("gateway", "worker")}
    assert "--read-only" in hardened["gateway"]  # run as compose runs it
    gateway = Container(
        image, data_dir, env, *services["gateway"]["command"], hardening=hardened["gateway"]
    )
    worker: Container | None = None
    try:
        await wait_ready(port, timeout=60)
        status, body = await asyncio.to_thread(get, f"http://127.0.0.1:{port}/healthz")
        assert status == 200, body
        assert gateway.exec(*HEALTHCHECK).returncode == 0  # the image's own HEALTHCHECK

        server.reply("Hello from the container.")
        telegram.message("hi", user_id=ANN)
        [reply] = await telegram.wait_messages(ANN, 1)
        assert reply.text == "Hello from the container."

        # SIGTERM: the gateway finishes, ends the session and queues its end in Redis
        assert gateway.stop() == 0, gateway.logs()[-3000:]
        worker = Container(
            image, data_dir, env, *services["worker"]["command"], hardening=hardened["worker"]
        )
        conn = redis.Redis.from_url(redis_server.url)
        finished = FinishedJobRegistry("chorus", connection=conn)
        for _ in range(600):  # the session's end, run by the worker container
            if any(job.startswith("chorus-end-") for job in finished.get_job_ids()):
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("no job finished:\n" + worker.logs()[-3000:])
        assert worker.stop() == 0, worker.logs()[-3000:]
        with SessionDB(ChorusPaths(data_dir).state_db) as db:
            [record] = db.list_sessions(limit=5)
        assert record.end_reason == "shutdown"
        logs = gateway.logs() + worker.logs()
        assert telegram.token not in logs and "sk-container-test" not in logs
    finally:
        for container in (gateway, worker):
            if container is not None:
                container.remove()


HEALTHCHECK = (
    "python3",
    "-c",
    "import os, socket, urllib.request; g = os.environ.get; ports = ["
    "g('CHORUS_GATEWAY__METRICS__PORT') or g('CHORUS_GATEWAY__HTTP__PORT', '8080'),"
    " g('CHORUS_WORKER__METRICS__PORT') or '9091']; port = next((p for p in ports"
    " if socket.socket().connect_ex(('127.0.0.1', int(p))) == 0), ports[0]);"
    " urllib.request.urlopen('http://127.0.0.1:%s/healthz' % port, timeout=4)",
)


def test_healthcheck_of_the_image_is_the_one_the_test_runs(image: str) -> None:
    inspected = json.loads(podman("image", "inspect", image).stdout)[0]
    assert inspected["Healthcheck"]["Test"] == ["CMD", *HEALTHCHECK]

"""The image's one HEALTHCHECK, run by podman for a ``chorus worker`` container: healthy
while the worker reaches its redis-server, unhealthy once Redis is gone (a plain
``docker run … chorus worker`` used to be marked unhealthy whatever it did)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.deploy.test_image import IMAGE, UID
from tests.fakes import RedisServer
from tests.fakes.containers import Container, build_image
from tests.telegram.test_telegram_process import free_port

pytest_plugins = ["tests.fakes.redis_fixtures"]
pytestmark = pytest.mark.container


def wait_health(container: Container, healthy: bool, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while container.healthy() != healthy:
        assert container.running(), container.logs()[-3000:]
        assert time.monotonic() < deadline, (
            f"the container never became {'healthy' if healthy else 'unhealthy'}:\n"
            + container.logs()[-3000:]
        )
        time.sleep(1)


def test_a_worker_container_is_healthy_while_it_reaches_redis(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    image = build_image(IMAGE)
    home = tmp_path / "data"
    home.mkdir(mode=0o700)
    os.chown(home, UID, UID)
    env = {
        "CHORUS_REDIS__URL": redis_server.url,
        # the host's network: ports of their own, nothing listens on the gateway's
        "CHORUS_GATEWAY__HTTP__PORT": str(free_port()),
        "CHORUS_WORKER__METRICS__PORT": str(free_port()),
    }
    worker = Container(image, home, env, "chorus", "worker", healthcheck=True)
    try:
        wait_health(worker, True)
        redis_server.stop()
        wait_health(worker, False)
        redis_server.start()
        wait_health(worker, True)  # the worker reconnects: healthy again
        assert worker.stop() == 0, worker.logs()[-3000:]
    finally:
        worker.remove()

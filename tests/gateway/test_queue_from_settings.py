"""The background queue a process builds from its settings."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from gateway.app import queue_from_settings
from gateway.config import load_settings
from memory.jobs import InProcessQueue, JobSpec, Outbox, RQQueue


def test_the_backend_follows_redis_url_and_the_password_is_never_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "home"
    in_process = queue_from_settings(load_settings(home, {}))
    assert isinstance(in_process, InProcessQueue)
    in_process.close()

    caplog.set_level(logging.DEBUG)
    url = "redis://:s3cret@127.0.0.1:1/0"  # nothing listens on port 1
    queue = queue_from_settings(load_settings(home, {"CHORUS_REDIS__URL": url}))
    assert isinstance(queue, RQQueue)
    queue.enqueue(JobSpec("a.b", (), "s", "j"))  # refused: parked, not raised
    status = queue.status()
    assert (status.reachable, status.outbox) == (False, 1)
    queue.close(timeout=5)
    assert "127.0.0.1:1" in caplog.text and "***" in caplog.text
    assert "s3cret" not in caplog.text
    assert Outbox(home / "state.db").count() == 1  # kept for the next start

"""A worker loop ended by a lost Redis is one WARNING line, not rq's ERROR traceback
(the worker is restarted once Redis answers); anything else keeps its traceback."""

from __future__ import annotations

import logging
import socket

import pytest
import redis

from memory.jobs._rq_worker import ChorusWorker
from tests.fakes.redis_server import RedisServer

pytest_plugins = ["tests.fakes.redis_fixtures"]


def _refused() -> redis.RedisError:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens there once closed
    try:
        redis.Redis(port=port, socket_connect_timeout=1).ping()
    except redis.RedisError as exc:
        return exc
    raise AssertionError("a closed port answered")


def _rq_quits(worker: ChorusWorker, exc: BaseException) -> None:
    """What rq's ``Worker.work`` logs when an exception ends its loop."""
    try:
        raise exc
    except BaseException:
        worker.log.error(  # noqa: G201 (rq's own call, as rq makes it)
            "Worker %s: found an unhandled exception, quitting...", worker.name, exc_info=True
        )


def test_a_lost_redis_ends_the_loop_with_one_warning(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    worker = ChorusWorker(["chorus"], connection=redis.Redis.from_url(redis_server.url), name="w1")
    caplog.set_level(logging.INFO, logger="rq.worker")
    _rq_quits(worker, _refused())
    [record] = [r for r in caplog.records if r.name == "rq.worker"]
    assert record.levelno == logging.WARNING
    assert record.getMessage() == (
        "Worker w1: Redis went away (ConnectionError); the worker restarts when it answers"
    )
    assert record.exc_info is None and "Traceback" not in caplog.text


def test_any_other_end_keeps_its_traceback(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    worker = ChorusWorker(["chorus"], connection=redis.Redis.from_url(redis_server.url), name="w2")
    caplog.set_level(logging.INFO, logger="rq.worker")
    _rq_quits(worker, KeyError("boom"))
    [record] = [r for r in caplog.records if r.name == "rq.worker"]
    assert record.levelno == logging.ERROR and record.exc_info is not None
    assert "Traceback" in caplog.text

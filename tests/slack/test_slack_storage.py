"""An event that cannot be recorded (the database is down) is refused with 503 and
``Retry-After``, so Slack sends it again; once the database is back it is answered once."""

from __future__ import annotations

import json
import logging
import time

import aiohttp
import pytest

from gateway.adapters._base import RECORD_RETRY_AFTER
from tests.fakes.postgres_server import PostgresServer
from tests.fakes.slack_requests import event_callback, sign
from tests.slack.conftest import ANN, DM_ANN, GatewayFactory

pytest_plugins = ["tests.fakes.postgres_fixtures"]


async def post_with_headers(url: str, payload: dict[str, object]) -> tuple[int, dict[str, str]]:
    """``payload`` as Slack posts an event; the status and the answer's headers."""
    body = json.dumps(payload)
    timestamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": sign(body, timestamp),
    }
    async with (
        aiohttp.ClientSession() as client,
        client.post(url, data=body, headers=headers) as response,
    ):
        return response.status, dict(response.headers)


async def test_an_event_arriving_while_postgresql_is_down_gets_503_and_is_answered_later(
    own_postgres: PostgresServer, make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    postgres = own_postgres
    gw = await make_gateway(DATABASE_URL=postgres.create_database())
    postgres.stop()
    payload = event_callback(gw.slack.person("are you there?", user=ANN, channel=DM_ANN))
    for _ in range(3):  # Slack retries
        status, headers = await post_with_headers(gw.events_url, payload)
        assert status == 503
        assert headers["Retry-After"] == str(RECORD_RETRY_AFTER)
    [line] = [r for r in caplog.records if r.levelno >= logging.ERROR]  # not one a request
    assert not [
        r for r in caplog.records if r.name.startswith("psycopg") and r.levelno >= logging.WARNING
    ]
    assert "inbox" in line.getMessage() and "cannot be used" in line.getMessage()
    assert line.exc_info is None
    assert "Traceback" not in caplog.text
    assert gw.server.requests == []

    postgres.start()
    status, _ = await post_with_headers(gw.events_url, payload)  # Slack's next retry
    assert status == 200
    await gw.slack.wait_posted(DM_ANN, 1)
    status, _ = await post_with_headers(gw.events_url, payload)  # and one more
    assert status == 200
    await gw.settle()
    assert [p.text for p in gw.slack.posted_in(DM_ANN)] == ["ok"]

"""A webhook update that cannot be recorded (the database is down) is refused with 503
and ``Retry-After``, so Telegram sends it again; once the database is back it is
answered once."""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path

import aiohttp
import pytest

from gateway.adapters._base import RECORD_RETRY_AFTER
from gateway.adapters.telegram import TelegramAdapter
from gateway.adapters.telegram._adapter import WEBHOOK_PATH
from gateway.app import serve
from tests.fakes import FakeOpenAI
from tests.fakes.postgres_server import PostgresServer
from tests.fakes.telegram_api import FakeTelegram
from tests.telegram.conftest import ANN, telegram_settings

pytest_plugins = ["tests.fakes.postgres_fixtures"]

SECRET = "right-Secret_42"


async def test_a_webhook_update_arriving_while_postgresql_is_down_gets_503_and_comes_again(
    own_postgres: PostgresServer,
    chorus_home: Path,
    server: FakeOpenAI,
    telegram: FakeTelegram,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    url = f"http://127.0.0.1:{port}{WEBHOOK_PATH}"
    settings = telegram_settings(
        chorus_home,
        server,
        telegram,
        CHORUS_TELEGRAM__WEBHOOK_URL=url,
        CHORUS_TELEGRAM__WEBHOOK_SECRET=SECRET,
        CHORUS_GATEWAY__HTTP__PORT=str(port),
        DATABASE_URL=own_postgres.create_database(),
    )
    adapter = TelegramAdapter(settings.telegram)
    stop = asyncio.Event()
    service = asyncio.create_task(serve(settings, [adapter], stop))
    try:
        await telegram.wait_for(adapter.is_connected, what="the adapter")
        own_postgres.stop()

        update = telegram.message("are you there?", user_id=ANN)  # posted, refused, again…
        secret = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
        async with (
            aiohttp.ClientSession() as client,
            client.post(url, json=update, headers=secret) as response,
        ):
            assert response.status == 503
            assert response.headers["Retry-After"] == str(RECORD_RETRY_AFTER)

        def refused() -> list[int]:
            return [s for u, s in telegram.webhook_deliveries if u == update["update_id"]]

        await telegram.wait_for(lambda: bool(refused()), timeout=30, what="Telegram's post")
        assert set(refused()) == {503}
        lines = [r for r in caplog.records if "could not be recorded" in r.getMessage()]
        assert len(lines) == 1  # one line, not one per request
        assert lines[0].levelno == logging.ERROR and lines[0].exc_info is None
        assert "Traceback" not in caplog.text
        assert server.requests == []

        own_postgres.start()
        [answer] = await telegram.wait_messages(ANN, 1, timeout=60)
        assert answer.text == "ok"
        await asyncio.sleep(1)
        assert [m.text for m in telegram.in_chat(ANN)] == ["ok"]  # once
    finally:
        stop.set()
        await asyncio.wait_for(service, 30)

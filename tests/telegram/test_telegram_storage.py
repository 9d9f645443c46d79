"""Storage faults on Telegram. A webhook update that cannot be recorded (the database
is down) is refused with 503 and ``Retry-After``, so Telegram sends it again; once the
database is back it is answered once. A full disk under ``state.db`` while polling is
reported as what it is (one ERROR line, readiness), the people whose messages wait are
told once, and every message is answered once when space is back."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from gateway import _texts as t
from gateway.adapters._base import RECORD_RETRY_AFTER
from gateway.adapters.telegram import TelegramAdapter
from gateway.adapters.telegram._adapter import WEBHOOK_PATH
from gateway.app import serve
from gateway.sessions import Inbox
from tests.fakes import FakeOpenAI
from tests.fakes.postgres_server import PostgresServer
from tests.fakes.telegram_api import FakeTelegram
from tests.telegram.conftest import ADMIN, ANN, BOB, GatewayFactory, telegram_settings
from tests.telegram.test_telegram_process import wait_ready

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
        await wait_ready(port)  # started: nothing of the start-up meets the outage
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
        # chorus's own lines (a test before may leave asyncio's notes of its fakes' tasks)
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR and r.name != "asyncio"]
        [line] = errors  # not one a request
        assert not [
            r
            for r in caplog.records
            if r.name.startswith("psycopg") and r.levelno >= logging.WARNING
        ]
        assert "inbox" in line.getMessage() and "cannot be used" in line.getMessage()
        assert line.exc_info is None
        assert "Traceback" not in caplog.text
        assert server.requests == []

        assert [m.text for m in telegram.in_chat(ANN)] == [t.STORAGE_FAULT_WAIT]  # told once

        own_postgres.start()
        await telegram.wait_messages(ANN, 2, timeout=60)
        await asyncio.sleep(1)
        assert [m.text for m in telegram.in_chat(ANN)] == [t.STORAGE_FAULT_WAIT, "ok"]  # once
    finally:
        stop.set()
        await asyncio.wait_for(service, 30)


@contextlib.contextmanager
def disk_full(inbox: Inbox) -> Iterator[None]:
    """The disk under ``state.db`` fills up, then space is freed again.

    SQLite's own limit (``max_page_count``, on the gateway's connection) makes every
    write that needs a new page fail with SQLITE_FULL, "database or disk is full", as
    on a full disk; a filler table takes the free pages left, as a big file would.
    """
    conn, lock = inbox._conn, inbox._lock
    assert conn is not None
    with lock:
        (pages,) = conn.execute("PRAGMA page_count").fetchone()
        conn.execute(f"PRAGMA max_page_count = {pages + 16}")
        conn.execute("CREATE TABLE disk_filler (junk BLOB)")
        with contextlib.suppress(sqlite3.OperationalError):
            for _ in range(1000):
                conn.execute("INSERT INTO disk_filler VALUES (zeroblob(1000))")
    try:
        yield
    finally:
        with lock:
            conn.execute("DROP TABLE disk_filler")
            conn.execute("PRAGMA max_page_count = 4294967294")


async def test_a_full_disk_is_reported_people_are_told_once_and_answered_once_space_is_back(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    gw = await make_gateway()
    tg = gw.telegram
    people = (ADMIN, ANN, BOB)
    assert (await gw.stack.readiness())["storage"]
    with disk_full(gw.stack.inbox):
        with tg.at_once():
            for person in people:
                tg.message(f"{person} says: " + "long words " * 300, user_id=person)

        def told(person: int) -> list[str]:
            return [m.text for m in tg.in_chat(person) if m.text == t.STORAGE_FAULT_WAIT]

        await tg.wait_for(lambda: all(told(p) for p in people), timeout=30, what="the notices")
        assert not (await gw.stack.readiness())["storage"]
        await asyncio.sleep(3)  # Telegram is asked again and again: told once all the same
        assert [len(told(p)) for p in people] == [1, 1, 1]
        assert [
            m.text for p in people for m in tg.in_chat(p) if m.text != t.STORAGE_FAULT_WAIT
        ] == []
        assert gw.server.requests == []
        assert tg.pending()  # unconfirmed: the updates stay at Telegram

        [line] = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert "disk full" in line.getMessage() and "state.db" in line.getMessage()
        assert "NetworkError" not in caplog.text and "polling failed" not in caplog.text
        assert "Traceback" not in caplog.text

    for person in people:
        await tg.wait_messages(person, 2, timeout=60)
    await gw.settle()
    for person in people:
        assert [m.text for m in tg.in_chat(person)] == [t.STORAGE_FAULT_WAIT, "ok"]
    assert (await gw.stack.readiness())["storage"]

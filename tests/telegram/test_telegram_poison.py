"""Updates that used to silence the bot: each is skipped, logged once, and the next is answered."""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path

import aiohttp
import pytest
from telegram import Bot
from telegram.error import TimedOut

from gateway.adapters.telegram import TelegramAdapter
from gateway.adapters.telegram._adapter import WEBHOOK_PATH
from gateway.adapters.telegram._pacing import ChatPacer
from gateway.adapters.telegram._send import POOL_FAILURES, STUCK_AFTER, TelegramSender
from gateway.app import serve
from tests.fakes import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram
from tests.telegram.conftest import ANN, BOB, GatewayFactory, telegram_settings

UNPARSEABLE = {"message": "hello"}
OBJECT_SENDER = {
    "message": {
        "message_id": 77,
        "date": 0,
        "chat": {"id": ANN, "type": "private"},
        "from": {"id": {"nested": 1}, "is_bot": False, "first_name": "X"},
        "text": "who am I",
    }
}
PRIVATE_TEXT = "my secret diary entry"


@pytest.mark.parametrize("poison", [UNPARSEABLE, OBJECT_SENDER], ids=["unparseable", "object-id"])
async def test_a_poison_update_is_skipped_and_the_next_message_answered(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture, poison: dict[str, object]
) -> None:
    caplog.set_level(logging.WARNING)
    gw = await make_gateway()
    tg = gw.telegram
    polls_before = len(tg.calls_of("getUpdates", status=None))
    tg.add_update(poison)
    tg.message(PRIVATE_TEXT, user_id=BOB)  # in the same batch as the poison, or just after
    [answer] = await tg.wait_messages(BOB, 1)
    assert answer.text == "ok"
    await tg.wait_for(lambda: not tg.pending(), what="every update confirmed")
    assert gw.adapter.is_connected()
    tg.message("and again", user_id=ANN)
    await tg.wait_messages(ANN, 1)

    skipped = [r for r in caplog.records if "skipped" in r.getMessage()]
    assert len(skipped) == 1
    assert gw.adapter.counters["skipped_updates"] == 1
    assert PRIVATE_TEXT not in caplog.text
    polls = len(tg.calls_of("getUpdates", status=None)) - polls_before
    assert polls < 20  # no loop fetching the same update again and again
    body, _ = gw.stack.metrics.render()
    assert b'chorus_adapter_events_total{event="skipped_updates",platform="telegram"} 1.0' in body


async def test_many_poison_updates_make_one_log_line_a_minute(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    gw = await make_gateway()
    tg = gw.telegram
    for n in range(30):
        tg.add_update({"message": {"text": f"broken {n}"}})
        if n % 10 == 9:
            await tg.wait_for(lambda: not tg.pending(), what="a batch confirmed")
    tg.message("still there?", user_id=ANN)
    await tg.wait_messages(ANN, 1)
    assert gw.adapter.counters["skipped_updates"] == 30
    assert len([r for r in caplog.records if "skipped" in r.getMessage()]) == 1


async def test_a_poison_webhook_update_is_confirmed_not_redelivered(
    chorus_home: Path, server: FakeOpenAI, telegram: FakeTelegram
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    url = f"http://127.0.0.1:{port}{WEBHOOK_PATH}"
    settings = telegram_settings(
        chorus_home,
        server,
        telegram,
        CHORUS_TELEGRAM__WEBHOOK_URL=url,
        CHORUS_TELEGRAM__WEBHOOK_SECRET="right-Secret_42",
        CHORUS_GATEWAY__HTTP__PORT=str(port),
    )
    adapter = TelegramAdapter(settings.telegram)
    stop = asyncio.Event()
    service = asyncio.create_task(serve(settings, [adapter], stop))
    try:
        await telegram.wait_for(adapter.is_connected, what="the adapter")
        secret = {"X-Telegram-Bot-Api-Secret-Token": "right-Secret_42"}
        async with aiohttp.ClientSession() as client:
            for poison in (UNPARSEABLE, OBJECT_SENDER, {"update_id": 5, **UNPARSEABLE}):
                async with client.post(url, json=poison, headers=secret) as response:
                    assert response.status == 200  # confirmed: Telegram must not resend it
        assert adapter.counters["skipped_updates"] == 3
        telegram.message("hello by webhook", user_id=ANN)
        [answer] = await telegram.wait_messages(ANN, 1)
        assert answer.text == "ok"
    finally:
        stop.set()
        await asyncio.wait_for(service, 30)


async def test_readiness_fails_when_update_processing_stopped(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    assert gw.adapter.is_connected()
    ready = await gw.stack.readiness()
    assert ready["adapter:telegram"]
    consumer = gw.adapter._consumer  # the task that hands updates on; it dies
    assert consumer is not None
    consumer.cancel()
    await asyncio.sleep(0)
    assert not gw.adapter.is_connected()
    assert not (await gw.stack.readiness())["adapter:telegram"]


async def test_cancelled_requests_under_load_never_exhaust_the_connection_pool(
    make_gateway: GatewayFactory,
) -> None:
    """Typing indicators are cancelled when an answer is ready. With the pool contended
    and connections closed after each answer, a request cancelled while its connection is
    being made used to keep a pool slot for good (encode/httpcore#1093), until every send
    failed with "all connections in the connection pool are occupied"."""
    gw = await make_gateway(CHORUS_AUTH__POLICY="open")
    tg = gw.telegram
    tg.close_connections = True
    tg.delays["sendChatAction"] = 0.3
    tg.delays["sendMessage"] = 1.5  # messages hold connections too: the pool is contended
    users = [5000 + n for n in range(60)]
    for round_ in range(1, 4):
        for user in users:
            tg.message(f"round {round_} from {user}", user_id=user)
        for user in users:
            await tg.wait_messages(user, round_, timeout=60)
    assert tg.in_flight_max >= 32  # every connection of the pool (32) was taken at once
    tg.delays.clear()
    tg.message("one more", user_id=users[0])
    await tg.wait_messages(users[0], 4, timeout=30)
    assert gw.adapter.is_connected()


async def test_a_cancelled_caller_never_cancels_its_request() -> None:
    """The request runs to its end in the background (see the test above for why)."""
    sender = TelegramSender(Bot("1:x"), ChatPacer())
    started, finished = asyncio.Event(), asyncio.Event()

    async def request() -> int:
        started.set()
        await asyncio.sleep(0.05)
        finished.set()
        return 1

    caller = asyncio.create_task(sender.request(request()))
    await started.wait()
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    await asyncio.wait_for(finished.wait(), 5)


async def test_a_stuck_or_exhausted_send_path_is_not_healthy() -> None:
    now = [0.0]
    sender = TelegramSender(Bot("1:x"), ChatPacer(), now=lambda: now[0])
    release = asyncio.Event()

    async def hanging() -> None:
        await release.wait()

    task = asyncio.create_task(sender.request(hanging()))
    await asyncio.sleep(0)
    assert sender.healthy()
    now[0] = STUCK_AFTER + 1
    assert not sender.healthy()
    release.set()
    await task
    assert sender.healthy()

    async def pool_timeout() -> None:
        raise TimedOut("Pool timeout: All connections in the connection pool are occupied.")

    for _ in range(POOL_FAILURES):
        with pytest.raises(TimedOut):
            await sender.request(pool_timeout())
    assert not sender.healthy()

    async def fine() -> int:
        return 1

    assert await sender.request(fine()) == 1
    assert sender.healthy()


def test_the_librarys_dump_of_a_bad_batch_is_withheld(caplog: pytest.LogCaptureFixture) -> None:
    import gateway.adapters.telegram._bot  # noqa: F401  (installs the filters)

    caplog.set_level(logging.INFO)
    batch = [{"update_id": 1, "message": {"text": PRIVATE_TEXT}}]
    logging.getLogger("telegram.Bot").critical(
        "Error while parsing updates! Received data was %r", batch
    )
    assert "Error while parsing updates!" in caplog.text
    assert PRIVATE_TEXT not in caplog.text

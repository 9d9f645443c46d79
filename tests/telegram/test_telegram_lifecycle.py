"""Polling across restarts, network loss and a second poller; webhook mode."""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path

import aiohttp
import pytest

from gateway.adapters import Intake
from gateway.adapters.telegram import TelegramAdapter
from gateway.adapters.telegram._adapter import WEBHOOK_PATH
from gateway.app import serve
from gateway.events import InboundMessage
from tests.fakes import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram
from tests.telegram.conftest import ANN, BOB, GatewayFactory, telegram_settings


def _answers(telegram: FakeTelegram, chat: int) -> list[str]:
    return [m.text for m in telegram.in_chat(chat) if m.text == "ok"]


async def test_restart_processes_updates_queued_while_down_once(
    make_gateway: GatewayFactory, telegram: FakeTelegram
) -> None:
    gw = await make_gateway()
    telegram.message("before the restart", user_id=ANN)
    await telegram.wait_for(lambda: len(_answers(telegram, ANN)) == 1, what="first answer")
    await gw.close()

    telegram.message("sent while the gateway was down", user_id=ANN)
    telegram.message("me too", user_id=BOB)
    again = await make_gateway()
    await telegram.wait_for(lambda: len(_answers(telegram, ANN)) == 2, what="Ann's answer")
    await telegram.wait_for(lambda: len(_answers(telegram, BOB)) == 1, what="Bob's answer")
    await again.settle()
    # a later message in each chat is answered only after everything before it there
    telegram.message("and now?", user_id=ANN)
    telegram.message("and now?", user_id=BOB)
    await telegram.wait_for(lambda: len(_answers(telegram, ANN)) >= 3, what="Ann's marker")
    await telegram.wait_for(lambda: len(_answers(telegram, BOB)) >= 2, what="Bob's marker")
    # every update confirmed by a later poll (which may come just after the answers)
    await telegram.wait_for(lambda: not telegram.pending(), what="every update confirmed")
    assert len(_answers(telegram, ANN)) == 3
    assert len(_answers(telegram, BOB)) == 2


async def test_drop_pending_updates_skips_what_queued_while_down(
    make_gateway: GatewayFactory, telegram: FakeTelegram
) -> None:
    telegram.message("stale", user_id=ANN)
    gw = await make_gateway(CHORUS_TELEGRAM__DROP_PENDING_UPDATES="true")
    [drop] = telegram.calls_of("deleteWebhook")
    assert drop.params["drop_pending_updates"] in (True, "true", "True")
    telegram.message("fresh", user_id=ANN)
    await telegram.wait_messages(ANN, 1)
    await gw.settle()
    assert len(telegram.in_chat(ANN)) == 1


async def test_reconnects_after_network_loss(
    make_gateway: GatewayFactory, telegram: FakeTelegram
) -> None:
    gw = await make_gateway()
    assert gw.adapter.is_connected()
    telegram.down = True
    await telegram.wait_for(lambda: not gw.adapter.is_connected(), what="disconnected state")
    readiness = await gw.stack.readiness()
    assert readiness["adapter:telegram"] is False
    telegram.down = False
    telegram.message("are you back?", user_id=ANN)
    await telegram.wait_messages(ANN, 1, timeout=20)
    assert gw.adapter.is_connected()


async def test_a_second_poller_is_reported_as_a_conflict(
    make_gateway: GatewayFactory,
    telegram: FakeTelegram,
    caplog: pytest.LogCaptureFixture,
) -> None:
    gw = await make_gateway()
    second = TelegramAdapter(gw.stack.settings.telegram, poll_timeout=1.0)

    async def ignore(_: InboundMessage) -> None:
        return None

    async def no_answer(_: InboundMessage) -> str:
        return ""

    await second.start(Intake(on_message=ignore, on_command=no_answer))
    try:
        await telegram.wait_for(
            lambda: "one poller per token" in caplog.text, what="the conflict warning"
        )
    finally:
        await second.stop()
    assert caplog.text.count("another process is polling") <= 2  # once per adapter


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_webhook_mode_checks_the_secret_on_every_request(
    chorus_home: Path, server: FakeOpenAI, telegram: FakeTelegram, caplog: pytest.LogCaptureFixture
) -> None:
    port = _free_port()
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
        assert telegram.webhook == {"url": url, "secret": "right-Secret_42"}
        telegram.message("hello by webhook", user_id=ANN)  # the fake posts it with the secret
        [answer] = await telegram.wait_messages(ANN, 1)
        assert answer.text == "ok"

        forged = {
            "update_id": 9_999,
            "message": {
                "message_id": 9_999,
                "date": 0,
                "chat": {"id": ANN, "type": "private"},
                "from": {"id": ANN, "is_bot": False, "first_name": "Ann"},
                "text": "forged",
            },
        }
        async with aiohttp.ClientSession() as client:
            for headers in ({"X-Telegram-Bot-Api-Secret-Token": "wrong"}, {}) * 25:
                async with client.post(url, json=forged, headers=headers) as response:
                    assert response.status == 403
            refusals = [r for r in caplog.records if "wrong secret token" in r.getMessage()]
            assert len(refusals) == 1  # a flood of forged requests does not flood the log
            secret = {"X-Telegram-Bot-Api-Secret-Token": "right-Secret_42"}
            async with client.post(url, data="not json", headers=secret) as response:
                assert response.status == 400
        telegram.message("a real one", user_id=ANN)  # answered only after what came before
        await telegram.wait_messages(ANN, 2)
        assert len(telegram.in_chat(ANN)) == 2
        assert "forged" not in str(server.requests)
        assert not telegram.calls_of("getUpdates", status=None)
    finally:
        stop.set()
        await asyncio.wait_for(service, 30)


async def test_the_token_is_not_in_the_webhook_path(
    chorus_home: Path, server: FakeOpenAI, telegram: FakeTelegram, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    settings = telegram_settings(
        chorus_home,
        server,
        telegram,
        CHORUS_TELEGRAM__WEBHOOK_URL="https://bot.example.com/telegram/webhook",
        CHORUS_TELEGRAM__WEBHOOK_SECRET="s",
    )
    [(method, path, _)] = TelegramAdapter(settings.telegram).http_routes()
    assert (method, path) == ("POST", "/telegram/webhook")
    assert telegram.token not in caplog.text


async def test_messages_sent_once_shutdown_began_wait_at_telegram_for_the_next_start(
    make_gateway: GatewayFactory, telegram: FakeTelegram
) -> None:
    gw = await make_gateway()
    telegram.message("before", user_id=ANN)
    await telegram.wait_messages(ANN, 1)
    await gw.adapter.pause()  # what a shutdown does first
    telegram.message("during the shutdown", user_id=ANN)
    await gw.close()
    assert [u["message"]["text"] for u in telegram.pending()] == ["during the shutdown"]
    assert len(telegram.in_chat(ANN)) == 1  # not answered "send that again"

    await make_gateway()
    answers = await telegram.wait_messages(ANN, 2)
    assert answers[1].text == "ok"

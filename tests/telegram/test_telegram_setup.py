"""Turning Telegram on: configuration, the service's adapter list, ``chorus doctor``."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.adapters.telegram import SPEC, TelegramAdapter
from gateway.app import enabled_adapters
from gateway.cli._doctor import platform_check
from gateway.config import load_settings
from gateway.errors import ConfigError
from tests.fakes import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram
from tests.telegram.conftest import telegram_settings

check_telegram = platform_check(SPEC)


def test_the_adapter_is_enabled_by_the_token(
    chorus_home: Path, server: FakeOpenAI, telegram: FakeTelegram
) -> None:
    settings = telegram_settings(chorus_home, server, telegram, CHORUS_LLM__VISION="true")
    [adapter] = enabled_adapters(settings)
    assert isinstance(adapter, TelegramAdapter)
    assert adapter.capabilities.length("😀") == 2
    assert adapter.http_routes() == []  # long polling: no webhook route
    without = load_settings(chorus_home, {"CHORUS_HOME": str(chorus_home)})
    assert enabled_adapters(without) == []


def test_a_webhook_needs_a_valid_secret(chorus_home: Path) -> None:
    chorus_home.mkdir(mode=0o700)
    base = {"CHORUS_HOME": str(chorus_home), "TELEGRAM_BOT_TOKEN": "1:x"}
    url = {"CHORUS_TELEGRAM__WEBHOOK_URL": "https://bot.example.com/telegram/webhook"}
    with pytest.raises(ConfigError, match="webhook_secret"):
        load_settings(chorus_home, {**base, **url})
    with pytest.raises(ConfigError, match="webhook_secret") as bad:
        load_settings(chorus_home, {**base, **url, "CHORUS_TELEGRAM__WEBHOOK_SECRET": "no spaces!"})
    assert "no spaces" not in str(bad.value)
    ok = load_settings(chorus_home, {**base, **url, "CHORUS_TELEGRAM__WEBHOOK_SECRET": "a-B_9"})
    assert ok.telegram.webhook_url is not None


def test_doctor_checks_the_token_with_get_me(
    chorus_home: Path, server: FakeOpenAI, telegram: FakeTelegram
) -> None:
    settings = telegram_settings(chorus_home, server, telegram)
    result = check_telegram(settings)
    assert result.ok, result.detail
    assert "@chorus_test_bot" in result.detail
    assert telegram.token not in result.detail
    assert telegram.calls_of("getMe")


def test_doctor_reports_a_rejected_token_without_printing_it(
    chorus_home: Path, server: FakeOpenAI, telegram: FakeTelegram
) -> None:
    settings = telegram_settings(chorus_home, server, telegram, TELEGRAM_BOT_TOKEN="9:wrong-one")
    result = check_telegram(settings)
    assert not result.ok
    assert "rejected" in result.detail
    assert "wrong-one" not in result.detail


def test_doctor_reports_an_unreachable_bot_api(
    chorus_home: Path, server: FakeOpenAI, telegram: FakeTelegram
) -> None:
    settings = telegram_settings(
        chorus_home, server, telegram, CHORUS_TELEGRAM__BASE_URL="http://127.0.0.1:9/bot"
    )
    result = check_telegram(settings)
    assert not result.ok
    assert "cannot reach" in result.detail


def test_doctor_skips_telegram_without_a_token(chorus_home: Path) -> None:
    chorus_home.mkdir(mode=0o700)
    settings = load_settings(chorus_home, {"CHORUS_HOME": str(chorus_home)})
    assert check_telegram(settings).ok


async def test_a_rejected_token_is_the_adapters_failure_without_showing_it(
    chorus_home: Path, server: FakeOpenAI, telegram: FakeTelegram
) -> None:
    settings = telegram_settings(chorus_home, server, telegram, TELEGRAM_BOT_TOKEN="9:wrong-one")
    adapter = TelegramAdapter(settings.telegram)
    await adapter.connect()  # the gateway reports it; other platforms go on
    failure = adapter.failure()
    assert failure is not None and "rejected the bot token" in failure
    assert "TELEGRAM_BOT_TOKEN" in failure and "wrong-one" not in failure
    assert not adapter.is_connected()
    await adapter.stop()  # nothing to stop, and no error

"""``chorus doctor``, which adapters the service enables, bots ignored, the token never logged."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from gateway.adapters.discord import SPEC, DiscordAdapter, DiscordSettings
from gateway.app import enabled_adapters, open_stack
from gateway.cli._doctor import platform_check
from gateway.errors import ConfigError
from tests.discord.conftest import ANN, DM_ANN, GatewayFactory, discord_settings
from tests.fakes import FakeOpenAI
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_data import BOT_USER, TOKEN, user

check_discord = platform_check(SPEC)


def test_doctor_names_the_bot_and_not_the_token(
    chorus_home: Path, server: FakeOpenAI, discord_api: FakeDiscord
) -> None:
    settings = discord_settings(chorus_home, server, discord_api)
    result = check_discord(settings)
    assert result.ok and "chorus" in result.detail and TOKEN not in result.detail

    wrong = discord_settings(chorus_home, server, discord_api, DISCORD_BOT_TOKEN="nope")
    result = check_discord(wrong)
    assert not result.ok and "rejected" in result.detail and "nope" not in result.detail


def test_enabled_adapters_include_discord_when_its_token_is_set(
    chorus_home: Path, server: FakeOpenAI, discord_api: FakeDiscord
) -> None:
    settings = discord_settings(chorus_home, server, discord_api)
    assert [a.name for a in enabled_adapters(settings)] == ["discord"]
    without = discord_settings(chorus_home, server, discord_api, DISCORD_BOT_TOKEN="")
    assert enabled_adapters(without) == []
    with pytest.raises(ConfigError):
        DiscordAdapter(DiscordSettings())


async def test_bots_are_ignored_and_the_token_never_logged(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    gw = await make_gateway()
    fake, llm = gw.discord, gw.server
    fake.message("I am a bot", author=user(7, "otherbot", bot=True), channel_id=DM_ANN)
    fake.message("I am me", author=BOT_USER, channel_id=DM_ANN)
    llm.reply("hello")
    fake.message("hi", author=ANN, channel_id=DM_ANN)
    await fake.wait_posted(DM_ANN, 1)
    await gw.settle()
    assert len(llm.requests) == 1
    fake.drop()  # a RESUME sends the token too
    await fake.wait_for(lambda: fake.resumes == 1, what="a resume")
    await fake.wait_for(gw.adapter.is_connected, what="the reconnect")
    await gw.close()
    assert any(r.name.startswith("discord.gateway") for r in caplog.records)
    assert all(TOKEN not in r.getMessage() for r in caplog.records)


async def test_a_gateway_closing_with_4004_fails_discord_with_what_to_fix(
    chorus_home: Path,
    server: FakeOpenAI,
    discord_api: FakeDiscord,
    caplog: pytest.LogCaptureFixture,
) -> None:
    discord_api.identify_refused = True  # the REST login works, IDENTIFY does not
    settings = discord_settings(chorus_home, server, discord_api)
    adapter = DiscordAdapter(settings.discord, start_wait=10)
    stack = await open_stack(settings, adapters=[adapter])
    try:
        await stack.start()
        failure = adapter.failure()
        assert failure is not None and "4004" in failure and "DISCORD_BOT_TOKEN" in failure
        checks = await stack.readiness()
        assert "adapter:discord" not in checks and checks["platforms"] is False
        assert stack.failures.failed == {"discord": failure}
        assert stack.failures.fatal([adapter]) is not None  # nothing is left to serve
    finally:
        await stack.runner.shutdown(5)
        await stack.close()
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [f"discord failed: {failure}"]
    assert "still trying" not in caplog.text and TOKEN not in caplog.text

"""A wrong token on any platform is handled alike, in a real `chorus gateway` process.

Telegram, Discord and Slack run together against their fakes; one of them gets a
token its platform rejects (Telegram 401 on getMe, Discord 401 on /users/@me,
Slack invalid_auth). That platform is reported failed — in /readyz with the
reason, in the log once with what to fix — and the others keep serving;
``gateway.require_all_platforms: true`` makes the gateway exit 2 instead.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes import FakeOpenAI
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_data import user
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_requests import SIGNING_SECRET
from tests.fakes.telegram_api import FakeTelegram
from tests.telegram.test_telegram_process import CHORUS, free_port, ready, wait_ready

ANN_TELEGRAM = 1001
ANN_DISCORD = 800_000_000_000_000_001
DM_ANN_DISCORD = 930_000_000_000_000_001
VARIABLES = {
    "telegram": "TELEGRAM_BOT_TOKEN",
    "discord": "DISCORD_BOT_TOKEN",
    "slack": "SLACK_BOT_TOKEN",
}

WRONG = {
    "telegram": "9:wrong-token-value",
    "discord": "wrong-token-value",
    "slack": "xoxb-wrong-token-value",
}


@pytest.fixture
def telegram() -> Iterator[FakeTelegram]:
    with FakeTelegram() as fake:
        yield fake


@pytest.fixture
def discord_api() -> Iterator[FakeDiscord]:
    with FakeDiscord() as fake:
        yield fake


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    with FakeSlack() as fake:
        yield fake


def three_platforms(
    home: Path,
    server: FakeOpenAI,
    telegram: FakeTelegram,
    discord: FakeDiscord,
    slack: FakeSlack,
    port: int,
) -> dict[str, str]:
    home.mkdir(mode=0o700, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
    env.update(
        {
            "CHORUS_HOME": str(home),
            "OPENAI_BASE_URL": server.base_url,
            "CHORUS_AUTH__POLICY": "open",
            "CHORUS_GATEWAY__HTTP__PORT": str(port),
            "CHORUS_LOG_LEVEL": "INFO",
            "PTB_TIMEDELTA": "1",
            "TELEGRAM_BOT_TOKEN": telegram.token,
            "CHORUS_TELEGRAM__BASE_URL": telegram.base_url,
            "CHORUS_TELEGRAM__BASE_FILE_URL": telegram.base_file_url,
            "DISCORD_BOT_TOKEN": discord.token,
            "CHORUS_DISCORD__API_URL": discord.api_url,
            "SLACK_BOT_TOKEN": slack.token,
            "SLACK_SIGNING_SECRET": SIGNING_SECRET,
            "CHORUS_SLACK__API_URL": slack.api_url,
        }
    )
    return env


def lines(err: bytes, level: str) -> list[str]:
    return [line for line in err.decode(errors="replace").splitlines() if f" {level} " in line]


async def stop(proc: subprocess.Popen[bytes]) -> tuple[int, bytes]:
    proc.send_signal(signal.SIGTERM)
    _, err = await asyncio.to_thread(proc.communicate, timeout=60)
    return proc.returncode, err


@pytest.mark.parametrize("wrong", ["telegram", "discord", "slack"])
async def test_a_rejected_token_fails_that_platform_and_the_others_keep_serving(
    chorus_home: Path,
    server: FakeOpenAI,
    telegram: FakeTelegram,
    discord_api: FakeDiscord,
    slack: FakeSlack,
    wrong: str,
) -> None:
    port = free_port()
    env = three_platforms(chorus_home, server, telegram, discord_api, slack, port)
    env[VARIABLES[wrong]] = WRONG[wrong]
    proc = subprocess.Popen([str(CHORUS), "gateway"], env=env, stderr=subprocess.PIPE)
    try:
        await wait_ready(port)
        status, text = await ready(port)
        body = json.loads(text)
        assert status == 200, text
        assert VARIABLES[wrong] in body["failed"][wrong]
        assert f"adapter:{wrong}" not in body["checks"]
        serving = [p for p in VARIABLES if p != wrong]
        assert all(body["checks"][f"adapter:{p}"] for p in serving)

        server.reply("Still here.")  # a platform that works still answers
        if wrong == "telegram":
            discord_api.message("hi", author=user(ANN_DISCORD, "ann"), channel_id=DM_ANN_DISCORD)
            [answer] = await discord_api.wait_posted(DM_ANN_DISCORD, 1)
            assert answer.content == "Still here."
        else:
            telegram.message("hi", user_id=ANN_TELEGRAM)
            [reply] = await telegram.wait_messages(ANN_TELEGRAM, 1)
            assert reply.text == "Still here."
        code, err = await stop(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 0, err.decode(errors="replace")[-3000:]
    [error] = lines(err, "ERROR")
    assert f"{wrong} failed" in error and VARIABLES[wrong] in error
    assert "keep(s) serving" in error
    log = err.decode(errors="replace")
    assert "still trying" not in log and "wrong-token-value" not in log
    assert "Traceback" not in log


async def test_with_require_all_platforms_a_rejected_token_stops_the_gateway(
    chorus_home: Path,
    server: FakeOpenAI,
    telegram: FakeTelegram,
    discord_api: FakeDiscord,
    slack: FakeSlack,
) -> None:
    port = free_port()
    env = three_platforms(chorus_home, server, telegram, discord_api, slack, port)
    env["DISCORD_BOT_TOKEN"] = "wrong-token-value"
    env["CHORUS_GATEWAY__REQUIRE_ALL_PLATFORMS"] = "true"
    proc = subprocess.Popen([str(CHORUS), "gateway"], env=env, stderr=subprocess.PIPE)
    try:
        _, err = await asyncio.to_thread(proc.communicate, timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    log = err.decode(errors="replace")
    assert proc.returncode == 2, log[-3000:]
    last = log.strip().splitlines()[-1]
    assert "Discord rejected the bot token" in last and "DISCORD_BOT_TOKEN" in last
    assert "require_all_platforms" in last
    assert "wrong-token-value" not in log and "Traceback" not in log


async def test_when_every_platform_is_rejected_the_gateway_exits(
    chorus_home: Path, server: FakeOpenAI, slack: FakeSlack
) -> None:
    chorus_home.mkdir(mode=0o700)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
    env.update(
        {
            "CHORUS_HOME": str(chorus_home),
            "OPENAI_BASE_URL": server.base_url,
            "CHORUS_GATEWAY__HTTP__PORT": str(port),
            "SLACK_BOT_TOKEN": "xoxb-wrong-token-value",
            "SLACK_SIGNING_SECRET": SIGNING_SECRET,
            "CHORUS_SLACK__API_URL": slack.api_url,
        }
    )
    proc = subprocess.Popen([str(CHORUS), "gateway"], env=env, stderr=subprocess.PIPE)
    try:
        _, err = await asyncio.to_thread(proc.communicate, timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    log = err.decode(errors="replace")
    assert proc.returncode == 2, log[-3000:]
    assert "Slack rejected the bot token (invalid_auth); check SLACK_BOT_TOKEN" in log
    assert "no platform is left" in log
    assert "wrong-token-value" not in log and "Traceback" not in log


async def test_a_normal_start_logs_one_up_line_and_no_warning(
    chorus_home: Path,
    server: FakeOpenAI,
    telegram: FakeTelegram,
    discord_api: FakeDiscord,
    slack: FakeSlack,
) -> None:
    port = free_port()
    env = three_platforms(chorus_home, server, telegram, discord_api, slack, port)
    del env["CHORUS_LOG_LEVEL"]  # the default level
    proc = subprocess.Popen([str(CHORUS), "gateway"], env=env, stderr=subprocess.PIPE)
    try:
        await wait_ready(port)
        code, err = await stop(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    log = err.decode(errors="replace")
    assert code == 0, log[-3000:]
    assert not lines(err, "WARNING") and not lines(err, "ERROR"), log
    [up] = [line for line in log.splitlines() if "gateway up" in line]
    assert " INFO " in up
    assert "telegram (long polling)" in up and "discord (gateway)" in up
    assert "slack (HTTP events on /slack/events)" in up
    assert "one process" in up and f":{port}" in up
    # nothing else of the start at the default level: the up line, then the stop
    assert [line for line in log.splitlines() if "gateway up" not in line] == [
        line for line in log.splitlines() if "shutting down" in line
    ]

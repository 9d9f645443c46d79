"""The whole gateway on Telegram: real python-telegram-bot, fake Bot API, fake LLM.

Runs on the real clock (the reply stream paces edits on it), so tests keep their
waits short.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gateway.adapters.telegram import TelegramAdapter
from gateway.app import GatewayStack, open_stack
from gateway.clock import Clock
from gateway.config import Settings
from tests.fakes import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram
from tests.platform_support import StackHandle, chat_settings

ADMIN = 1000
ANN = 1001
BOB = 1002
GROUP = -100_500
FORUM = -100_600


async def _no_sleep(_: float) -> None:
    return None


@pytest.fixture(autouse=True)
def _timedelta_periods(monkeypatch: pytest.MonkeyPatch) -> None:
    """python-telegram-bot's coming ``timedelta`` periods, without its deprecation warnings."""
    monkeypatch.setenv("PTB_TIMEDELTA", "1")


@pytest.fixture
def telegram() -> Iterator[FakeTelegram]:
    with FakeTelegram() as fake:
        yield fake


def telegram_settings(
    home: Path, server: FakeOpenAI, telegram: FakeTelegram, **env: str
) -> Settings:
    platform = {
        "TELEGRAM_BOT_TOKEN": telegram.token,
        "CHORUS_TELEGRAM__BASE_URL": telegram.base_url,
        "CHORUS_TELEGRAM__BASE_FILE_URL": telegram.base_file_url,
        "CHORUS_AUTH__ADMINS": f"telegram:{ADMIN}",
        "CHORUS_AUTH__ALLOWED_USERS": f"telegram:{ANN},telegram:{BOB}",
    }
    return chat_settings(home, server, platform, **env)


@dataclass
class TelegramGateway(StackHandle):
    stack: GatewayStack
    adapter: TelegramAdapter
    telegram: FakeTelegram
    server: FakeOpenAI

    async def close(self) -> None:
        await self.close_stack()


GatewayFactory = Callable[..., Awaitable[TelegramGateway]]


@pytest.fixture
async def make_gateway(
    chorus_home: Path, server: FakeOpenAI, telegram: FakeTelegram
) -> AsyncIterator[GatewayFactory]:
    opened: list[TelegramGateway] = []

    async def build(
        *, vision: bool = False, clock: Clock | None = None, **env: str
    ) -> TelegramGateway:
        """``clock`` paces the adapter's sends and stamps the fake's calls."""
        settings = telegram_settings(chorus_home, server, telegram, **env)
        if clock is not None:
            telegram.now = clock.time
        adapter = TelegramAdapter(settings.telegram, vision=vision, poll_timeout=2.0, clock=clock)
        stack = await open_stack(settings, llm_sleep=_no_sleep, adapters=[adapter])
        await stack.start()
        gateway = TelegramGateway(stack, adapter, telegram, server)
        opened.append(gateway)
        return gateway

    yield build
    for gateway in opened:
        await gateway.close()


def user_texts(request: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in request["messages"] if m["role"] == "user"]

"""The whole gateway on Discord: real discord.py, fake Discord (REST + gateway), fake LLM.

Runs on the real clock (the reply stream paces edits on it), so tests keep their
waits short.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent.llm import LLMClient
from gateway.adapters.discord_adapter import DiscordAdapter
from gateway.config import Settings, load_settings
from gateway.stack import GatewayStack, open_stack
from tests.fakes import FakeOpenAI
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_data import user

ANN_ID = 800_000_000_000_000_001
BOB_ID = 800_000_000_000_000_002
STRANGER_ID = 800_000_000_000_000_009
ANN = user(ANN_ID, "ann")
BOB = user(BOB_ID, "bob")
DM_ANN = 930_000_000_000_000_001


async def _no_sleep(_: float) -> None:
    return None


@pytest.fixture
def discord_api() -> Iterator[FakeDiscord]:
    with FakeDiscord() as fake:
        yield fake


def discord_settings(home: Path, server: FakeOpenAI, fake: FakeDiscord, **env: str) -> Settings:
    environ = {
        "CHORUS_HOME": str(home),
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-test",
        "DISCORD_BOT_TOKEN": fake.token,
        "CHORUS_DISCORD__API_URL": fake.api_url,
        "CHORUS_AUTH__ALLOWED_USERS": f"discord:{ANN_ID},discord:{BOB_ID}",
        "CHORUS_AUTH__RATE_LIMIT_PER_MINUTE": "0",
        "CHORUS_MEMORY__NUDGE_INTERVAL": "0",
        "CHORUS_SESSIONS__DAILY_RESET_HOUR": "null",
        **env,
    }
    home.mkdir(mode=0o700, exist_ok=True)
    return load_settings(home, environ)


@dataclass
class DiscordGateway:
    stack: GatewayStack
    adapter: DiscordAdapter
    discord: FakeDiscord
    server: FakeOpenAI

    @property
    def runner(self) -> Any:
        return self.stack.runner

    async def close(self) -> None:
        if not self.stack.db._closed:
            await self.runner.shutdown(5)
            await self.stack.close()

    async def settle(self) -> None:
        """Let every session worker finish."""
        for _ in range(1000):
            await asyncio.sleep(0.01)
            if self.runner.sessions.quiet:
                return


GatewayFactory = Callable[..., Awaitable[DiscordGateway]]


@pytest.fixture
async def make_gateway(
    chorus_home: Path, server: FakeOpenAI, discord_api: FakeDiscord
) -> AsyncIterator[GatewayFactory]:
    opened: list[DiscordGateway] = []

    async def build(**env: str) -> DiscordGateway:
        settings = discord_settings(chorus_home, server, discord_api, **env)
        adapter = DiscordAdapter(settings.discord, retry_delay=0.05, guild_ready_timeout=0.2)
        stack = await open_stack(
            settings, llm=LLMClient(settings.llm, sleep=_no_sleep), adapters=[adapter]
        )
        await stack.runner.start()
        gateway = DiscordGateway(stack, adapter, discord_api, server)
        opened.append(gateway)
        assert adapter.is_connected()
        return gateway

    yield build
    for gateway in opened:
        await gateway.close()

"""The whole gateway on Discord: real discord.py, fake Discord (REST + gateway), fake LLM.

Runs on the real clock (the reply stream paces edits on it), so tests keep their
waits short.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gateway.adapters.discord import DiscordAdapter
from gateway.app import GatewayStack, open_stack
from gateway.config import Settings
from tests.fakes import FakeOpenAI
from tests.fakes.discord_api import FakeDiscord
from tests.fakes.discord_data import user
from tests.platform_support import StackHandle, chat_settings

ANN_ID = 800_000_000_000_000_001
BOB_ID = 800_000_000_000_000_002
STRANGER_ID = 800_000_000_000_000_009
ADMIN_ID = 800_000_000_000_000_010
ANN = user(ANN_ID, "ann")
BOB = user(BOB_ID, "bob")
ADMIN = user(ADMIN_ID, "admin")
STRANGER = user(STRANGER_ID, "stranger")
DM_ANN = 930_000_000_000_000_001


async def _no_sleep(_: float) -> None:
    return None


@pytest.fixture
def discord_api() -> Iterator[FakeDiscord]:
    with FakeDiscord() as fake:
        yield fake


def discord_settings(home: Path, server: FakeOpenAI, fake: FakeDiscord, **env: str) -> Settings:
    platform = {
        "DISCORD_BOT_TOKEN": fake.token,
        "CHORUS_DISCORD__API_URL": fake.api_url,
        "CHORUS_AUTH__ALLOWED_USERS": f"discord:{ANN_ID},discord:{BOB_ID}",
        "CHORUS_AUTH__ADMINS": f"discord:{ADMIN_ID}",
    }
    return chat_settings(home, server, platform, **env)


@dataclass
class DiscordGateway(StackHandle):
    stack: GatewayStack
    adapter: DiscordAdapter
    discord: FakeDiscord
    server: FakeOpenAI

    async def close(self) -> None:
        await self.close_stack()


GatewayFactory = Callable[..., Awaitable[DiscordGateway]]


@pytest.fixture
async def make_gateway(
    chorus_home: Path, server: FakeOpenAI, discord_api: FakeDiscord
) -> AsyncIterator[GatewayFactory]:
    opened: list[DiscordGateway] = []

    async def build(
        *, defer_after: float = 2.0, vision: bool = False, **env: str
    ) -> DiscordGateway:
        settings = discord_settings(chorus_home, server, discord_api, **env)
        adapter = DiscordAdapter(
            settings.discord,
            vision=vision,
            retry_delay=0.05,
            guild_ready_timeout=0.2,
            defer_after=defer_after,
            identify_delay=0.05,
        )
        stack = await open_stack(settings, llm_sleep=_no_sleep, adapters=[adapter])
        await stack.start()
        gateway = DiscordGateway(stack, adapter, discord_api, server)
        opened.append(gateway)
        assert adapter.is_connected()
        return gateway

    yield build
    for gateway in opened:
        await gateway.close()

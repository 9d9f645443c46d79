"""A whole chorus stack in one test: settings, background queue, provider plugin, agents."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.agent import Agent
from agent.context import SessionContext
from agent.llm import LLMClient
from gateway.app import AgentFactory, Background, start_background
from gateway.config import LiveSettings, Settings, load_settings
from memory.paths import ChatRef, ChorusPaths, UserKey
from memory.transcripts import AsyncSessionDB
from tests.fakes import FakeOpenAI
from tests.integration.recorder_plugin import install_recorder


async def _no_sleep(_: float) -> None:
    return None


def stack_settings(home: Path, server: FakeOpenAI, **env: str) -> Settings:
    environ = {
        "CHORUS_HOME": str(home),
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "sk-test",
        "CHORUS_MEMORY__PROVIDER": "recorder",
        "CHORUS_MEMORY__NUDGE_INTERVAL": "0",
        "CHORUS_MEMORY__FLUSH_MIN_TURNS": "1",
        **env,
    }
    return load_settings(home, environ)


@dataclass
class Stack:
    settings: Settings
    background: Background
    db: AsyncSessionDB
    factory: AgentFactory

    async def agent(self, session_id: str, user_key: str = "telegram:1") -> Agent:
        platform = user_key.partition(":")[0]
        agent = self.factory.agent_for(
            SessionContext(
                session_id, UserKey.parse(user_key), ChatRef(platform, f"chat-{user_key}")
            )
        )
        await agent.start()
        return agent


async def build_stack(settings: Settings) -> Stack:
    live = LiveSettings(settings)
    background = start_background(live)
    db = await AsyncSessionDB.open(ChorusPaths(settings.home).state_db)
    factory = AgentFactory(
        live,
        db=db,
        llm=LLMClient(settings.llm, sleep=_no_sleep),
        scheduler=background.scheduler,
        provider=background.provider,
    )
    return Stack(settings, background, db, factory)


async def close_stack(stack: Stack) -> None:
    stack.background.close(10)
    await stack.factory.aclose()
    await stack.db.aclose()


@pytest.fixture
async def stack(chorus_home: Path, server: FakeOpenAI) -> AsyncIterator[Stack]:
    chorus_home.mkdir(mode=0o700)
    install_recorder(chorus_home, prefetch_text="RECALLED about {query}")
    built = await build_stack(stack_settings(chorus_home, server))
    yield built
    await close_stack(built)

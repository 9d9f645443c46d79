"""Agents wired to real parts: files, SQLite, the openai client and a fake endpoint."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from agent.agent import Agent
from agent.context import AgentConfig, SessionContext
from agent.llm import LLMClient
from agent.settings import AgentSettings, CompressionSettings, LLMSettings
from memory.paths import ChatRef, ChorusPaths, UserKey
from memory.settings import MemorySettings
from memory.store import MemoryStore
from memory.transcripts import AsyncSessionDB
from tests.fakes import FakeOpenAI

MakeAgent = Callable[..., Awaitable[Agent]]


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[AsyncSessionDB]:
    database = await AsyncSessionDB.open(ChorusPaths(tmp_path).state_db)
    yield database
    await database.aclose()


class Sleeps:
    """Records backoff delays instead of sleeping."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
async def make_agent(
    tmp_path: Path, server: FakeOpenAI, db: AsyncSessionDB, sleeps: Sleeps
) -> AsyncIterator[MakeAgent]:
    clients: list[LLMClient] = []
    paths = ChorusPaths(tmp_path)

    async def build(
        user_key: str = "telegram:1",
        *,
        session_id: str | None = None,
        model: str = "test-model",
        llm: dict[str, Any] | None = None,
        agent: dict[str, Any] | None = None,
        compression: dict[str, Any] | None = None,
        memory: dict[str, Any] | None = None,
        start: bool = True,
    ) -> Agent:
        options: dict[str, Any] = {
            "base_url": server.base_url,
            "api_key": "test",
            "model": model,
            "max_retries": 2,
            **(llm or {}),
        }
        llm_settings = LLMSettings(**options)
        client = LLMClient(llm_settings, sleep=sleeps)
        clients.append(client)
        config = AgentConfig(
            llm=llm_settings,
            agent=AgentSettings(**(agent or {})),
            compression=CompressionSettings(**(compression or {})),
            memory=MemorySettings(**(memory or {})),
        )
        store = MemoryStore(
            paths.memory_file,
            paths.user_file(UserKey.parse(user_key)),
            memory_char_limit=config.memory.memory_char_limit,
            user_char_limit=config.memory.user_char_limit,
        )
        session = SessionContext(
            session_id=session_id or uuid.uuid4().hex,
            user_key=UserKey.parse(user_key),
            chat=ChatRef(user_key.partition(":")[0], "chat-" + user_key),
            platform_hint=f"You are talking on {user_key.partition(':')[0].title()}.",
        )
        built = Agent(session, llm=client, store=store, db=db, config=config)
        if start:
            await built.start()
        return built

    yield build
    for client in clients:
        await client.aclose()


def system_of(request: dict[str, Any]) -> Any:
    first = request["messages"][0]
    assert first["role"] == "system"
    return first["content"]


def dump(request: dict[str, Any]) -> str:
    return json.dumps(request, ensure_ascii=False)


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(m["content"]) for m in request["messages"] if m["role"] == "tool"]

"""Builds agents from settings: the one place that wires the layers together."""

from __future__ import annotations

import uuid

from agent.agent import Agent, AgentConfig, SessionContext
from agent.llm import LLMClient
from agent.tools.registry import ToolRegistry
from gateway.config import Settings
from gateway.errors import ConfigError
from memory.paths import ChorusPaths, UserRef, parse_user_key
from memory.session_db_async import AsyncSessionDB
from memory.store import MemoryStore


def require_llm_endpoint(settings: Settings) -> None:
    """Refuse to start a chat without anywhere to send it."""
    if settings.llm.base_url is None and settings.llm.api_key is None:
        raise ConfigError(
            "no LLM endpoint configured: set OPENAI_BASE_URL to an OpenAI-compatible "
            "server (and OPENAI_API_KEY if it needs one)"
        )


def new_session_id() -> str:
    return uuid.uuid4().hex


class AgentFactory:
    """Agents for any user, sharing one LLM client, one database and one tool registry."""

    def __init__(
        self,
        settings: Settings,
        *,
        db: AsyncSessionDB,
        llm: LLMClient | None = None,
        tools: ToolRegistry | None = None,
    ) -> None:
        self.settings = settings
        self.paths = ChorusPaths(settings.home)
        self.db = db
        self.llm = llm or LLMClient(settings.llm)
        self.tools = tools or ToolRegistry()
        self.config = AgentConfig(
            llm=settings.llm,
            agent=settings.agent,
            compression=settings.compression,
            memory=settings.memory,
        )

    def store_for(self, user: UserRef) -> MemoryStore:
        """The shared MEMORY.md plus this one user's USER.md."""
        return MemoryStore(
            self.paths.memory_file,
            self.paths.user_file(user),
            memory_char_limit=self.settings.memory.memory_char_limit,
            user_char_limit=self.settings.memory.user_char_limit,
        )

    def agent_for(self, session: SessionContext, *, handoff_summary: str | None = None) -> Agent:
        user = parse_user_key(session.user_key)
        return Agent(
            session,
            llm=self.llm,
            store=self.store_for(user),
            db=self.db,
            config=self.config,
            tools=self.tools,
            handoff_summary=handoff_summary,
        )

    async def aclose(self) -> None:
        await self.llm.aclose()

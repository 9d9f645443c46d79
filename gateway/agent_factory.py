"""Builds agents from settings: the one place that wires the layers together."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from agent.agent import Agent
from agent.context import SessionContext
from agent.job_context import ProviderLoader, build_manager
from agent.llm import LLMClient
from agent.scheduler import JobScheduler
from agent.shared_writes import SharedWriteGate
from agent.tools.registry import ToolRegistry
from gateway.auth import admin_checker
from gateway.background import agent_config
from gateway.config import Settings
from gateway.errors import ConfigError
from memory.paths import ChorusPaths, UserRef, parse_user_key
from memory.providers import BuiltinMemoryProvider, MemoryManager
from memory.store import MemoryStore, StagedWrites
from memory.transcripts import AsyncSessionDB


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
        scheduler: JobScheduler | None = None,
        load_provider: ProviderLoader | None = None,
        now: Callable[[], float] = time.time,
        staging: StagedWrites | None = None,
    ) -> None:
        self.settings = settings
        self.paths = ChorusPaths(settings.home)
        self.db = db
        self.llm = llm or LLMClient(settings.llm)
        self.tools = tools or ToolRegistry()
        self.scheduler = scheduler
        self.load_provider = load_provider
        self.now = now
        self.staging = staging
        self.is_admin = admin_checker(settings.auth.admins)
        self.config = agent_config(settings)

    def store_for(self, user: UserRef) -> MemoryStore:
        """The shared MEMORY.md plus this one user's USER.md."""
        return MemoryStore(
            self.paths.memory_file,
            self.paths.user_file(user),
            memory_char_limit=self.settings.memory.memory_char_limit,
            user_char_limit=self.settings.memory.user_char_limit,
        )

    def manager_for(self, session: SessionContext, store: MemoryStore) -> MemoryManager | None:
        """The session's MemoryManager (built-in + external provider), if one is configured."""
        if self.load_provider is None:
            return None
        return build_manager(
            self.load_provider,
            session_id=session.session_id,
            chorus_home=self.settings.home,
            platform=session.platform,
            user_key=session.user_key,
            agent_context="primary",
            builtin=BuiltinMemoryProvider(store),
        )

    def agent_for(self, session: SessionContext, *, handoff_summary: str | None = None) -> Agent:
        """A new agent for ``session``; call ``start()`` on it (off the hot path of others)."""
        user = parse_user_key(session.user_key)
        store = self.store_for(user)
        return Agent(
            session,
            llm=self.llm,
            store=store,
            db=self.db,
            config=self.config,
            tools=self.tools,
            handoff_summary=handoff_summary,
            memory=self.manager_for(session, store),
            scheduler=self.scheduler,
            now=self.now,
            shared_writes=SharedWriteGate(
                policy=self.settings.memory.shared_writes,
                is_admin=self.is_admin(session.user_key),
                staging=self.staging,
                session_id=session.session_id,
                user_key=session.user_key,
            ),
        )

    async def aclose(self) -> None:
        await self.llm.aclose()

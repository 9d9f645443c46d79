"""Builds agents from the settings in effect: the one place that wires the layers together."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable

from agent.agent import Agent
from agent.context import SessionContext
from agent.jobs import JobScheduler, ProviderSource, build_manager
from agent.llm import LLMClient, LLMEmbeddings
from agent.shared_writes import SharedWriteGate, WriteAudit
from agent.tools.policy import Approver, ToolGate, ToolPolicy
from agent.tools.registry import CORE_TOOL_NAMES, ToolRegistry
from gateway.access import admin_checker
from gateway.app._background import agent_config
from gateway.config import LiveSettings, Settings, database_location
from gateway.errors import ConfigError
from memory.paths import ChorusPaths, UserKey
from memory.providers import BuiltinMemoryProvider, MemoryManager
from memory.store import MemoryStore, PostgresMemoryFiles, StagedWrites, memory_files_for
from memory.transcripts import AsyncSessionDB

logger = logging.getLogger(__name__)


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
    """Agents for any user, sharing one LLM client, one database and one tool registry.

    Every agent is built from ``live.current``: memory limits, persona, compression
    and the memory policy of a reload reach every session started after it, and
    the shared-memory gate asks the current admins and policy at every write.
    """

    def __init__(
        self,
        live: LiveSettings,
        *,
        db: AsyncSessionDB,
        llm: LLMClient | None = None,
        tools: ToolRegistry | None = None,
        scheduler: JobScheduler | None = None,
        provider: ProviderSource | None = None,
        now: Callable[[], float] = time.time,
        staging: StagedWrites | None = None,
        audit: WriteAudit | None = None,
        approver: Approver | None = None,
    ) -> None:
        self.live = live
        self.paths = ChorusPaths(live.current.home)
        self.db = db
        self.llm = llm or LLMClient(live.current.llm)
        self.tools = tools or ToolRegistry()
        self.scheduler = scheduler
        self.provider = provider
        self.now = now
        self.staging = staging
        self.audit = audit
        self.approver = approver
        """Asks people in their chat about calls to ``ask`` tools."""
        self._admins: tuple[list[str], Callable[[str], bool]] | None = None
        self._policy: tuple[object, ToolPolicy] | None = None
        self._memory_files: PostgresMemoryFiles | None = None
        self._embedder: LLMEmbeddings | None = None

    @property
    def settings(self) -> Settings:
        return self.live.current

    def is_admin(self, user_key: UserKey | str) -> bool:
        """Whether ``user_key`` is an admin under the settings in effect now."""
        admins = self.settings.auth.admins
        if self._admins is None or self._admins[0] is not admins:
            self._admins = (admins, admin_checker(admins))
        return self._admins[1](str(user_key))

    def tool_policy(self) -> ToolPolicy:
        """``tools.policy`` as in effect now (a reload applies to the next decision)."""
        rules = self.settings.tools.policy
        if self._policy is None or self._policy[0] is not rules:
            self._policy = (rules, ToolPolicy(rules))
        return self._policy[1]

    def tool_names(self) -> list[str]:
        """The tools beyond the core ones an agent built now has, before the tool policy:
        the registered ones and those the configured memory provider declares (blocking)."""
        names = set(self.tools.names)
        if self.provider is not None:
            try:
                provided = self.provider.load().get_tool_schemas()
            except Exception as exc:  # a provider that cannot load offers no tools either
                logger.warning("memory provider tools unknown (%s)", type(exc).__name__)
                provided = []
            names.update(str(s["name"]) for s in provided if "name" in s)
        return sorted(names - CORE_TOOL_NAMES)

    def store_for(self, user: UserKey | None) -> MemoryStore:
        """The shared MEMORY.md plus this one user's USER.md (None: MEMORY.md only)."""
        memory = self.settings.memory
        return MemoryStore(
            self.paths.memory_file,
            self.paths.user_file(user) if user is not None else self.paths.no_user_file,
            memory_char_limit=memory.memory_char_limit,
            user_char_limit=memory.user_char_limit,
            files=self.memory_files(),
        )

    def memory_files(self) -> PostgresMemoryFiles | None:
        """The PostgreSQL memory files with ``database.url`` set, else None (files on disk).

        One for the factory, made on first use, not one per store: stores are
        made per session and this holds the process's pool for the URL.
        (``database`` is restart-only, so the location never changes under it.)
        """
        if self._memory_files is None:
            where = database_location(self.settings)
            self._memory_files = memory_files_for(where, self.paths.memories_dir)
        return self._memory_files

    @property
    def embedder(self) -> LLMEmbeddings:
        """The chat endpoint's ``/v1/embeddings`` for providers (one per process, made on use)."""
        if self._embedder is None:
            self._embedder = LLMEmbeddings(self.llm.settings)
        return self._embedder

    def manager_for(self, session: SessionContext, store: MemoryStore) -> MemoryManager | None:
        """The session's MemoryManager (built-in + external provider), if one is configured."""
        if self.provider is None:
            return None
        return build_manager(
            self.provider,
            session_id=session.session_id,
            chorus_home=self.settings.home,
            platform=session.platform,
            user_key=str(session.user_key),
            agent_context="primary",
            builtin=BuiltinMemoryProvider(store),
            chat_id=session.chat_id,
            thread_id=session.thread_id,
            is_direct=session.is_direct,
            parent_session_id=session.parent_session_id,
            embedder=self.embedder,
            account_keys=list(session.search_keys),
        )

    def warm(self) -> None:
        self.llm.preconnect.warm()

    @property
    def needs_parent(self) -> bool:
        return self.provider is not None  # it is initialized with the parent session

    def agent_for(self, session: SessionContext, *, handoff_summary: str | None = None) -> Agent:
        """A new agent for ``session``; call ``start()`` on it (off the hot path of others)."""
        store = self.store_for(session.user_key)
        user_key = session.user_key
        return Agent(
            session,
            llm=self.llm,
            store=store,
            db=self.db,
            config=agent_config(self.settings),
            tools=self.tools,
            handoff_summary=handoff_summary,
            memory=self.manager_for(session, store),
            scheduler=self.scheduler,
            now=self.now,
            shared_writes=SharedWriteGate(
                policy=lambda: self.settings.memory.shared_writes,
                is_admin=self.is_admin,
                staging=self.staging,
                session_id=session.session_id,
                user_key=user_key,
                audit=self.audit,
                account=session.account,
            ),
            tool_gate=ToolGate(
                session, self.tool_policy, self.is_admin, self.audit, approver=self.approver
            ),
        )

    async def aclose(self) -> None:
        await self.llm.aclose()
        files, self._memory_files = self._memory_files, None
        if files is not None:
            files.close()

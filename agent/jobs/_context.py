"""What background jobs need, set up once per worker process.

Connections and provider managers are opened lazily and per process id (an
SQLite connection must never cross a fork), then kept from one job to the next:
``chorus worker`` runs jobs in its own process. A session's managers are shut
down when it ends (``release``), the least recently used beyond
``max_cached_managers`` when evicted, and all when the worker stops (``close``).
"""

from __future__ import annotations

import logging
import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agent.context import AgentConfig
from agent.jobs._loop import JobLoop, MeterSource
from agent.jobs._provider_source import ProviderSource, build_manager
from agent.llm import LLMEmbeddings
from agent.settings import LLMSettings
from agent.shared_writes import SharedWriteGate, WriteAudit
from memory.database import Location
from memory.jobs import JobState
from memory.paths import ChorusPaths, UserKey
from memory.people import PeopleStore, PeopleStoreError, account_keys
from memory.providers import MemoryManager, ProviderHealth
from memory.store import MemoryStore, PostgresMemoryFiles, StagedWrites, memory_files_for
from memory.transcripts import SessionDB, SessionRecord

__all__ = ["JobContext"]

logger = logging.getLogger(__name__)


@dataclass
class JobContext:
    home: Path
    config: AgentConfig
    provider: ProviderSource | None = None
    handoff: bool = False
    """Whether ending a session also stores a short summary for the next one."""
    is_admin: Callable[[str], bool] = field(default=lambda _: False)
    """Whose sessions may write the shared MEMORY.md directly (``memory.shared_writes``)."""
    max_cached_managers: int = 256
    database: Location | None = None
    """Where the shared tables are (``database.url``); None: ``CHORUS_HOME/state.db``."""
    audit: WriteAudit | None = None
    """The audit log, for the shared-memory writes a flush makes."""
    meters: MeterSource | None = None
    """Makes the usage meter of each job thread's LLM client (flushes and summaries are
    counted against the person's budget, never refused)."""
    _pid: int = field(default=-1, init=False, repr=False)
    _db: SessionDB | None = field(default=None, init=False, repr=False)
    _state: JobState | None = field(default=None, init=False, repr=False)
    _staging: StagedWrites | None = field(default=None, init=False, repr=False)
    _health: ProviderHealth | None = field(default=None, init=False, repr=False)
    _loop: JobLoop | None = field(default=None, init=False, repr=False)
    _memory_files: PostgresMemoryFiles | None = field(default=None, init=False, repr=False)
    _people: PeopleStore | None = field(default=None, init=False, repr=False)
    _managers: OrderedDict[tuple[str, str], MemoryManager | None] = field(
        default_factory=OrderedDict, init=False, repr=False
    )
    _embedder: tuple[LLMSettings, LLMEmbeddings] | None = field(
        default=None, init=False, repr=False
    )

    @property
    def paths(self) -> ChorusPaths:
        return ChorusPaths(self.home)

    @property
    def db_path(self) -> Location:
        return self.paths.state_db if self.database is None else self.database

    def _ensure_process(self) -> None:
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._db = None
            self._state = None
            self._staging = None
            self._health = None
            self._loop = None
            self._memory_files = None
            self._people = None
            self._managers = OrderedDict()
            self._embedder = None

    @property
    def db(self) -> SessionDB:
        self._ensure_process()
        if self._db is None:
            self._db = SessionDB(self.db_path)
        return self._db

    @property
    def state(self) -> JobState:
        self._ensure_process()
        if self._state is None:
            self._state = JobState(self.db_path)
        return self._state

    @property
    def staging(self) -> StagedWrites:
        self._ensure_process()
        if self._staging is None:
            self._staging = StagedWrites(self.db_path)
        return self._staging

    @property
    def health(self) -> ProviderHealth:
        self._ensure_process()
        if self._health is None:
            self._health = ProviderHealth(self.db_path)
        return self._health

    @property
    def loop(self) -> JobLoop:
        """This process's kept event loops (one per job thread) for jobs' async work."""
        self._ensure_process()
        if self._loop is None:
            self._loop = JobLoop(self.db_path, self.meters)
        return self._loop

    def update(
        self, config: AgentConfig, *, handoff: bool, is_admin: Callable[[str], bool]
    ) -> None:
        """Use reloaded settings from the next job on (and in the gates of running ones)."""
        self.config = config
        self.handoff = handoff
        self.is_admin = is_admin

    @property
    def embedder(self) -> LLMEmbeddings:
        """The LLM endpoint's ``/v1/embeddings`` for providers (per process and settings)."""
        self._ensure_process()
        if self._embedder is None or self._embedder[0] != self.config.llm:
            if self._embedder is not None:
                self._embedder[1].close()  # the settings changed (a reload)
            self._embedder = (self.config.llm, LLMEmbeddings(self.config.llm))
        return self._embedder[1]

    def shared_write_gate(
        self, session_id: str, user_key: UserKey, account: UserKey | None = None
    ) -> SharedWriteGate:
        return SharedWriteGate(
            policy=lambda: self.config.memory.shared_writes,
            is_admin=lambda writer: self.is_admin(str(writer)),
            staging=self.staging,
            session_id=session_id,
            user_key=user_key,
            audit=self.audit,
            account=account,
        )

    @property
    def memory_files(self) -> PostgresMemoryFiles | None:
        """The memory files in PostgreSQL (``database`` is a URL), else None: files on disk.

        One per process, kept from job to job like the other connections; a
        store is made per job and must not open a pool of its own.
        """
        self._ensure_process()
        if self._memory_files is None:
            self._memory_files = memory_files_for(self.db_path, self.paths.memories_dir)
        return self._memory_files

    @property
    def people(self) -> PeopleStore:
        """Which accounts are one person (``/link``): a person's providers read them too."""
        self._ensure_process()
        if self._people is None:
            self._people = PeopleStore(self.db_path)
        return self._people

    def store_for(self, user: UserKey) -> MemoryStore:
        return MemoryStore(
            self.paths.memory_file,
            self.paths.user_file(user),
            memory_char_limit=self.config.memory.memory_char_limit,
            user_char_limit=self.config.memory.user_char_limit,
            files=self.memory_files,
        )

    def manager_for(self, record: SessionRecord, agent_context: str) -> MemoryManager | None:
        """A manager holding the external provider for this session, or None without one."""
        if self.provider is None:
            return None
        self._ensure_process()
        key = (record.id, agent_context)
        if key in self._managers:
            self._managers.move_to_end(key)
            return self._managers[key]
        manager = build_manager(
            self.provider,
            session_id=record.id,
            chorus_home=self.home,
            platform=record.platform,
            user_key=record.user_key,
            agent_context=agent_context,
            chat_id=record.chat_id,
            thread_id=record.thread_id,
            is_direct=record.is_direct,
            parent_session_id=record.parent_session_id,
            embedder=self.embedder,
            account_keys=self._account_keys(record.user_key),
        )
        self._managers[key] = manager
        while len(self._managers) > self.max_cached_managers:
            _, evicted = self._managers.popitem(last=False)
            if evicted is not None:
                evicted.shutdown_all()
        return manager

    def _account_keys(self, user_key: str) -> list[str]:
        """The accounts linked into the person ``user_key`` (none when unreadable)."""
        try:
            return account_keys(self.people, user_key)
        except PeopleStoreError as exc:
            logger.warning("linked accounts unreadable, recalling the person's own: %s", exc)
            return []

    def release(self, session_id: str) -> None:
        """Shut down the providers held for a session that has ended."""
        for key in [k for k in self._managers if k[0] == session_id]:
            manager = self._managers.pop(key)
            if manager is not None:
                manager.shutdown_all()

    def close(self) -> None:
        for manager in self._managers.values():
            if manager is not None:
                manager.shutdown_all()
        self._managers.clear()
        if self._loop is not None:
            self._loop.close()
            self._loop = None
        if self._db is not None:
            self._db.close()
        if self._state is not None:
            self._state.close()
        if self._staging is not None:
            self._staging.close()
        if self._health is not None:
            self._health.close()
        if self._people is not None:
            self._people.close()
            self._people = None
        if self._memory_files is not None:
            self._memory_files.close()
        if self._embedder is not None:
            self._embedder[1].close()
        self._memory_files = None
        self._embedder = None
        self._db = None
        self._state = None
        self._staging = None
        self._health = None

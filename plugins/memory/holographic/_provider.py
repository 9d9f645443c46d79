"""The holographic memory provider: one local SQLite fact store per user.

Isolation: every call reads and writes exactly one user's store, ``CHORUS_HOME/
providers/holographic/users/<platform>/<id>/facts.db`` (``chats/`` for a chat's
shared key). A per-turn call that carries ``speaker`` uses the speaker's own
store; without it, the session's ``user_key``. The speaker is never remembered
from one call to the next, so a late background job cannot write one person's
words into another's store.

Automatic learning (preferences and decisions the user states, see
:mod:`._extract`) happens in ``sync_turn`` and ``on_session_end`` and never in
the ``"flush"`` context, whose prompts chorus writes itself. Re-delivered turns
change nothing: a fact with the same normalised content is updated, not added.
The write side (learning, mirroring, taking back) is :mod:`._learning`.

Logs never carry fact text or queries above DEBUG; at DEBUG only as
:func:`memory.log_content.loggable` allows (their length, unless content logging is on).
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

from memory.log_content import loggable
from memory.providers import ForgetResult, MemoryProvider, provider_dir, strip_memory_context
from plugins.memory._kit import erase_user_dir

from . import _config, _hrr, _search
from ._embed import Embeddings
from ._fact import StoreError
from ._learning import Learning
from ._schema import fts5_available
from ._store import FactStore
from ._tools import (
    FACT_FEEDBACK,
    FACT_FEEDBACK_SCHEMA,
    FACT_STORE,
    FACT_STORE_SCHEMA,
    Options,
    ToolError,
    run_fact_feedback,
    run_fact_store,
)

logger = logging.getLogger(__name__)

FACTS_FILE = "facts.db"

SYSTEM_PROMPT_BLOCK = (
    "You have a fact_store tool: a structured, per-user fact memory (add, search, probe an "
    "entity, related, reason across entities, contradict, update, remove, list) and "
    "fact_feedback to rate a recalled fact."
)


def _error(message: str) -> str:
    return json.dumps({"success": False, "error": message}, ensure_ascii=False)


class HolographicProvider(Learning, MemoryProvider):
    """Local fact memory with entity links, trust, and hybrid (FTS5 + HRR) recall.

    ``hrr``, ``prefetch_limit`` and ``probe_mode`` override the saved settings when given.
    """

    local_state = "its facts (facts.db)"

    def __init__(
        self,
        *,
        hrr: bool | None = None,
        prefetch_limit: int | None = None,
        probe_mode: str | None = None,
    ) -> None:
        self._hrr_override = hrr
        self._limit_override = prefetch_limit
        self._probe_override = probe_mode
        self._embeddings: Embeddings | None = None
        self._settings = _config.DEFAULTS
        self._home: Path | None = None
        self._user_key = ""
        self._context = "primary"
        self._stores: dict[str, FactStore] = {}
        self._paths: dict[str, Path] = {}
        self._lock = threading.RLock()

    # -- identity and start-up -----------------------------------------------

    @property
    def name(self) -> str:
        return _config.PROVIDER_NAME

    def is_available(self) -> bool:
        return fts5_available()

    @property
    def use_hrr(self) -> bool:
        """Whether recall scores with HRR vectors: configured on and numpy importable."""
        hrr = self._settings.hrr if self._hrr_override is None else self._hrr_override
        return hrr and _hrr.numpy_available()

    @property
    def unbind(self) -> bool:
        """Whether probe, related and reason unbind the bank: ``probe_mode: unbind`` and HRR."""
        mode = self._probe_override or self._settings.probe_mode
        return mode == "unbind" and self.use_hrr

    @property
    def embeddings_active(self) -> bool:
        """Whether the endpoint's embeddings are used (``auto``, an embedder, and it has them)."""
        return self._embeddings is not None and self._embeddings.active

    def _options(self) -> Options:
        embeddings = self._embeddings if self.embeddings_active else None
        return Options(use_hrr=self.use_hrr, unbind=self.unbind, embeddings=embeddings)

    def _fill(self, store: FactStore) -> None:
        if self._embeddings is not None and self._embeddings.active:
            self._embeddings.fill(store)

    @property
    def prefetch_limit(self) -> int:
        if self._limit_override is not None:
            return max(1, self._limit_override)
        return self._settings.prefetch_limit

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        home = Path(kwargs["chorus_home"])
        user_key = str(kwargs["user_key"])
        provider_dir(home, _config.PROVIDER_NAME, user_key)  # validates the key
        with self._lock:
            self._close_stores()
            self._paths.clear()
            self._home = home
            self._user_key = user_key
            self._context = str(kwargs.get("agent_context") or "primary")
            config = kwargs.get("config")
            self._settings = (  # memory.providers.holographic wins over the saved file
                _config.parse(config, source="memory.providers.holographic")
                if isinstance(config, dict) and config
                else _config.load(home)
            )
            embedder = kwargs.get("embedder")
            self._embeddings = (
                Embeddings(embedder, self._settings.embedding_model)
                if self._settings.embeddings == "auto"
                and embedder is not None
                and _hrr.numpy_available()
                else None
            )
        logger.debug(
            "holographic provider ready for session %s (%s, hrr=%s, unbind=%s, embeddings=%s)",
            session_id,
            self._context,
            self.use_hrr,
            self.unbind,
            self._embeddings is not None,
        )

    def merge_users(self, chorus_home: Path, sources: list[str], target: str) -> bool:
        """Copy the facts of each source user's store into ``target``'s: a fact already
        there (same normalised content) is kept once. The sources are not changed."""
        hrr = _config.load(chorus_home).hrr and _hrr.numpy_available()
        into = FactStore(
            provider_dir(chorus_home, _config.PROVIDER_NAME, target) / FACTS_FILE, hrr=hrr
        )
        copied = 0
        try:
            for source in sources:
                path = provider_dir(chorus_home, _config.PROVIDER_NAME, source) / FACTS_FILE
                if not path.exists() or source == target:
                    continue
                store = FactStore(path, hrr=False)
                try:
                    rows = store.query("SELECT content, category FROM facts ORDER BY id")
                finally:
                    store.close()
                for content, category in rows:
                    _, new = into.add(str(content), str(category))
                    copied += int(new)
        finally:
            into.close()
        logger.info("holographic: %d facts joined into a linked person's store", copied)
        return True

    def _store(self, speaker: Any = None) -> FactStore:
        """The store of ``speaker`` when given, else of the session's user key."""
        if speaker is not None and not isinstance(speaker, str):
            raise ValueError("speaker must be a user key")
        with self._lock:
            if self._home is None:
                raise RuntimeError("the holographic provider is not initialised")
            key = speaker if speaker else self._user_key
            path = self._paths.get(key)
            if path is None:
                path = provider_dir(self._home, _config.PROVIDER_NAME, key) / FACTS_FILE
                self._paths[key] = path
            store = self._stores.get(str(path))
            if store is None:
                store = FactStore(path, hrr=self.use_hrr)
                self._stores[str(path)] = store
            return store

    # -- recall --------------------------------------------------------------

    def system_prompt_block(self) -> str:
        return SYSTEM_PROMPT_BLOCK

    def prefetch(self, query: str, *, session_id: str = "", speaker: str | None = None) -> str:
        text = strip_memory_context(query).strip()
        if not text:
            return ""
        store = self._store(speaker)
        embeddings = self._embeddings if self.embeddings_active else None
        hits = _search.recall(
            store,
            text,
            limit=self.prefetch_limit,
            use_hrr=self.use_hrr,
            query_embedding=None if embeddings is None else embeddings.query(text),
        )
        logger.debug("holographic prefetch for %s: %d facts", loggable(text), len(hits))
        if not hits:
            return ""
        store.bump_retrievals(h.fact.id for h in hits)
        return "\n".join(f"- {h.fact.content}" for h in hits)

    def on_turn_start(self, turn_number: int, message: str, **kwargs: Any) -> None:
        """Open the store this turn will use, so the first recall pays no start-up cost."""
        self._store(kwargs.get("speaker")).open()

    # -- tools ---------------------------------------------------------------

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [FACT_STORE_SCHEMA, FACT_FEEDBACK_SCHEMA]

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        if not isinstance(args, dict):
            return _error("arguments must be a JSON object")
        try:
            store = self._store(kwargs.get("speaker"))
            if tool_name == FACT_STORE:
                result = run_fact_store(store, args, self._options())
            elif tool_name == FACT_FEEDBACK:
                result = run_fact_feedback(store, args)
            else:
                return _error(f"unknown tool '{tool_name}'")
        except ToolError as exc:
            return _error(str(exc))
        except (StoreError, ValueError) as exc:
            logger.warning("holographic %s failed: %s", tool_name, type(exc).__name__)
            return _error(f"{tool_name} could not run: {type(exc).__name__}")
        return json.dumps(result, ensure_ascii=False)

    # -- a person's data -----------------------------------------------------

    def export_user(self, user_id: str) -> dict[str, Any] | None:
        """Every fact in ``user_id``'s store, most recently updated first."""
        store = self._store(user_id)
        facts = store.recent(None, max(store.count(), 1))
        return {"memories": [{"text": f.content, **f.as_json()} for f in facts]}

    def forget_user(self, user_id: str) -> ForgetResult:
        """Close ``user_id``'s store and remove their directory (facts.db and its journal)."""
        with self._lock:
            if self._home is None:
                raise RuntimeError("the holographic provider is not initialised")
            path = provider_dir(self._home, _config.PROVIDER_NAME, user_id) / FACTS_FILE
            store = self._stores.pop(str(path), None)
            if store is not None:
                store.close()
            self._paths.pop(user_id, None)
            removed = erase_user_dir(self._home, _config.PROVIDER_NAME, user_id)
        return ForgetResult(erased=True, removed=removed)

    # -- teardown and configuration ------------------------------------------

    def _close_stores(self) -> None:
        stores, self._stores = list(self._stores.values()), {}
        for store in stores:
            store.close()

    def shutdown(self) -> None:
        with self._lock:
            self._close_stores()

    def get_config_schema(self) -> list[dict[str, Any]]:
        return [dict(field) for field in _config.SCHEMA]

    def save_config(self, values: dict[str, Any], chorus_home: Path) -> None:
        _config.save(values, chorus_home)

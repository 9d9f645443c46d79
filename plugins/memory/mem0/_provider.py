"""The mem0 memory provider: recall before a turn, extraction after it, four tools.

Isolation: the mem0 ``user_id`` of a call is its ``speaker`` when given (a
group chat session), else the session's ``user_key``; both are canonical user
keys (``telegram:12345``, ``telegram#chat:-100``). Every search is filtered by
that id (and in oss mode runs in that user's own store), every record shown is
checked to be theirs, and ``mem0_update``/``mem0_delete`` first fetch the
memory and refuse one that is not. The speaker is never remembered between calls.

Calls by context (see :mod:`memory.providers`): the tools (``"primary"``,
``"flush"``) wait up to :data:`PRIMARY_WAIT` seconds for a store another
process holds; ``prefetch`` only :data:`PREFETCH_WAIT`, then answers with the
recall ``queue_prefetch`` warmed after the last turn (a busy store is not a
failure); ``sync_turn`` and ``queue_prefetch`` (``"background"``) wait up to
:data:`BACKGROUND_WAIT`. ``sync_turn`` is skipped in
``"flush"``. A re-delivered turn is found in the user's ``state.db`` and not
added again; a turn withdrawn by ``/undo`` has the memories it created removed.

Logs carry no memory or query text above DEBUG.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

from memory.log_content import loggable
from memory.providers import ForgetResult, provider_dir, strip_memory_context, withdrawn_turn
from plugins.memory._breaker import CircuitBreaker
from plugins.memory._kit import (
    BadConfig,
    Guard,
    NotReady,
    ProviderUnavailable,
    RemoteProvider,
    Session,
    erase_user_dir,
)

from . import _config, _deps, _tools
from ._backend import Backend, MemoryRecord, Message, StoreBusy
from ._guard import make_guard
from ._ops import UserOps
from ._oss import OssBackend
from ._platform import PlatformBackend
from ._state import UserState, content_hash, turn_hash

logger = logging.getLogger(__name__)

PREFETCH_WAIT = 0.25
"""Seconds prefetch waits for a store another process holds before using the warm cache."""
PRIMARY_WAIT = 10.0
BACKGROUND_WAIT = 120.0
WARM_MAX_AGE = 900.0
"""How old the warm recall of ``queue_prefetch`` may be and still be used."""
MAX_LINE = 500

SYSTEM_PROMPT_BLOCK = (
    "You have a long-term memory of each person (mem0): what it recalls for a message "
    "arrives with that message. mem0_search looks things up; mem0_add stores one durable "
    "fact; mem0_update and mem0_delete change or forget a memory by the id mem0_search gave."
)


def format_recall(records: list[MemoryRecord]) -> str:
    """Recalled memories as short lines; ``""`` for none."""
    lines = []
    for record in records:
        text = " ".join(record.text.split())
        if text:
            lines.append(f"- {text[: MAX_LINE - 1] + '…' if len(text) > MAX_LINE else text}")
    return "\n".join(lines)


class Mem0Provider(RemoteProvider):
    """mem0 (``pip install 'chorus[mem0]'``) in process (oss) or on the Mem0 platform.

    ``clock``, ``failure_threshold`` and ``cooldown`` set the circuit breaker;
    ``environ`` replaces ``os.environ`` as the fallback for missing settings.
    """

    local_state = "which turns it already sent (state.db) and, in oss mode, its memories"
    provider_name = _config.PROVIDER_NAME
    dependency = _deps
    config_schema = _config.SCHEMA
    tool_schemas = _tools.SCHEMAS

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._settings = _config.Settings()
        self._backend: Backend | None = None
        self._states: dict[str, UserState] = {}

    def make_guard(self, breaker: CircuitBreaker) -> Guard:
        return make_guard(breaker)

    @property
    def settings(self) -> _config.Settings:
        return self._settings

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        session = Session.of(session_id, kwargs)
        home = session.home
        settings = _config.parse(kwargs.get("config"), self._environ)
        if settings.mode == "platform" and not settings.api_key:
            raise BadConfig("mem0 platform mode needs an API key: set MEM0_API_KEY")
        if (
            settings.mode == "oss"
            and not settings.openai_api_key
            and settings.openai_base_url == _config.DEFAULT_OPENAI_BASE_URL
        ):
            raise BadConfig(
                "mem0 needs OPENAI_API_KEY, or openai_base_url pointing at a server without one"
            )
        mem0 = _deps.load(home)
        backend: Backend = (
            PlatformBackend(mem0, settings)
            if settings.mode == "platform"
            else OssBackend(mem0, home, settings)
        )
        with self._lock:
            self._close()
            self.start_session(session)
            self._settings, self._backend = settings, backend
        logger.debug(
            "mem0 provider ready for session %s (%s, %s)", session_id, self._context, settings.mode
        )

    # -- plumbing ------------------------------------------------------------

    def is_ready(self) -> bool:
        return self._home is not None and self._backend is not None

    def _ready(self) -> tuple[Path, Backend]:
        with self._lock:
            if self._home is None or self._backend is None:
                raise NotReady("the mem0 provider is not initialised")
            return self._home, self._backend

    def _state(self, user_id: str) -> UserState:
        home, _ = self._ready()
        with self._lock:
            state = self._states.get(user_id)
            if state is None:
                state = UserState(provider_dir(home, _config.PROVIDER_NAME, user_id))
                self._states[user_id] = state
            return state

    def _wait(self) -> float:
        return BACKGROUND_WAIT if self._context == "background" else PRIMARY_WAIT

    def _ops(self, speaker: Any = None, *, wait: float | None = None) -> UserOps:
        """The operations for ``speaker`` (else the session's user), waiting ``wait`` at most."""
        _, backend = self._ready()
        user_id, *also = self.recall_keys(speaker)
        wait = self._wait() if wait is None else wait
        return UserOps(backend, self.guard, user_id, wait, tuple(also))

    # -- recall --------------------------------------------------------------

    def system_prompt_block(self) -> str:
        return SYSTEM_PROMPT_BLOCK

    def prefetch(self, query: str, *, session_id: str = "", speaker: str | None = None) -> str:
        text = strip_memory_context(query).strip()
        if not text:
            return ""
        ops = self._ops(speaker, wait=PREFETCH_WAIT)
        if self.guard.paused:
            logger.debug("mem0 prefetch skipped: paused")
            return ""
        try:
            records = ops.recall(text, self._settings.search_limit, count_busy=False)
        except StoreBusy:
            logger.debug("mem0 prefetch: store busy, using the warm recall")
            return self._state(ops.user_id).cached_prefetch(WARM_MAX_AGE)
        except ProviderUnavailable:
            return ""
        logger.debug("mem0 prefetch for %s: %d memories", loggable(text), len(records))
        return format_recall(records)

    def queue_prefetch(
        self, query: str, *, session_id: str = "", speaker: str | None = None
    ) -> None:
        text = strip_memory_context(query).strip()
        if not text or self.guard.paused:
            return
        ops = self._ops(speaker)
        records = ops.recall(text, self._settings.search_limit)
        self._state(ops.user_id).store_prefetch(format_recall(records))

    # -- write ---------------------------------------------------------------

    def sync_turn(
        self,
        user_content: str,
        assistant_content: str,
        *,
        session_id: str = "",
        messages: list[dict[str, Any]] | None = None,
        speaker: str | None = None,
    ) -> None:
        prepared = self.turn(user_content, assistant_content, session_id, speaker)
        if prepared is None:
            return
        user, assistant, session = prepared.user, prepared.assistant, prepared.session_id
        ops = self._ops(speaker)
        content = content_hash(self._settings.backend_id, session, user, assistant)
        state, turn = self._state(self._user_key), turn_hash(content, ops.user_id)
        if state.synced(turn):
            logger.debug("mem0 sync_turn of session %s: turn already synced", session)
            return
        turn_messages: list[Message] = [
            {"role": role, "content": content}
            for role, content in (("user", user), ("assistant", assistant))
            if content
        ]
        outcome = ops.add(turn_messages, {"source": "chorus", "chorus_turn": turn}, infer=True)
        state.record_turn(content, ops.user_id, outcome.memory_ids)
        logger.debug(
            "mem0 sync_turn of session %s: %d new memories", session, len(outcome.memory_ids)
        )

    def on_session_switch(
        self,
        new_session_id: str,
        *,
        parent_session_id: str = "",
        reset: bool = False,
        rewound: bool = False,
        **kwargs: Any,
    ) -> None:
        """After ``/undo`` of a synced turn: remove the memories that turn created."""
        if self.follow_reset(new_session_id, reset):
            return
        withdrawn = withdrawn_turn(rewound, kwargs)
        if withdrawn is None or self._context == "flush":
            return
        user, assistant = withdrawn.user, withdrawn.assistant
        known = self.owner(withdrawn.speaker) if withdrawn.speaker else None
        state = self._state(self._user_key)
        for session in dict.fromkeys((new_session_id, self._session_id)):
            content = content_hash(self._settings.backend_id, session, user, assistant)
            found = state.find_turn(content, known)
            if found is None:
                continue
            turn, user_id, ids = found
            ops = self._ops(user_id)
            removed = sum(ops.delete_if_owned(memory_id) for memory_id in ids)
            state.forget_turn(turn)
            logger.debug("mem0 removed %d memories of a withdrawn turn", removed)
            return

    # -- tools ---------------------------------------------------------------

    def run_tool(
        self, tool_name: str, args: dict[str, Any], call: Mapping[str, Any]
    ) -> dict[str, Any]:
        ops = self._ops(call.get("speaker"))
        return ops.run_tool(tool_name, args, self._settings.search_limit)

    # -- a person's data -----------------------------------------------------

    def export_user(self, user_id: str) -> dict[str, Any] | None:
        """Every mem0 memory of ``user_id``."""
        _, backend = self._ready()
        records = self.guard.run("list", partial(backend.list_all, user_id, wait=self._wait()))
        return {
            "memories": [
                {"id": r.id, "text": r.text, "created_at": r.created_at, "metadata": r.metadata}
                for r in records
                if r.user_id in (None, user_id)
            ]
        }

    def forget_user(self, user_id: str) -> ForgetResult:
        """mem0's delete of all the user's memories, checked by listing; then their local state."""
        home, backend = self._ready()
        wait = self._wait()
        before = self.guard.run("list", partial(backend.list_all, user_id, wait=wait))
        self.guard.run("delete", partial(backend.delete_all, user_id, wait=wait))
        with self._lock:
            self._states.pop(user_id, None)
        removed = len(before)
        left = self.guard.run("list", partial(backend.list_all, user_id, wait=wait))
        backend.forget_local(user_id)
        erase_user_dir(home, _config.PROVIDER_NAME, user_id)
        if left:
            return ForgetResult(False, f"mem0 still lists {len(left)} of their memories", removed)
        return ForgetResult(erased=True, removed=removed)

    # -- teardown and configuration ------------------------------------------

    def _close(self) -> None:
        backend, self._backend = self._backend, None
        if backend is not None:
            backend.close()

    def shutdown(self) -> None:
        with self._lock:
            self._close()

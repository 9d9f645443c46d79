"""The Hindsight memory provider: a bank per person, a session retained as one document.

Isolation: every call acts on one bank, that of the ``speaker`` when given (a
group session), else of the session's ``user_key``; both canonical user keys,
encoded injectively into the bank id (see ``_config``). Recall, reflect and
retain name that bank and nothing else, and the warm recall is kept in the
bank owner's own provider directory.

Writes: ``sync_turn`` (``"background"``) only appends the turn to the
session's buffer on disk, so a killed worker loses nothing and a re-delivered
job adds nothing. At ``on_session_end`` (or once ``buffer_turns`` turns of a
session are waiting) the turns are sealed into a part and retained as one
document with a stable id; a part Hindsight did not take stays on disk and is
retried by the next background call, and retaining it twice only replaces it.

Recall: ``prefetch`` (on the turn's path) asks Hindsight live, bounded by
``recall_timeout``; when that fails, times out or the circuit breaker is open,
it answers with the recall ``queue_prefetch`` warmed after the last turn, so a
dead backend costs a turn one bounded wait at most and, once the breaker is
open, nothing. ``recall_mode`` (see :mod:`._config`): ``context`` offers no
tools, ``tools`` neither injects nor warms a recall. The tools never raise: a
failure is a JSON error. Background methods let a failure out (the manager logs
its class and records it for ``chorus memory status``) except while paused. No
text above DEBUG.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import partial
from typing import Any

from memory.log_content import loggable
from memory.providers import ForgetResult, provider_dir, strip_memory_context, withdrawn_turn
from plugins.memory._breaker import CircuitBreaker
from plugins.memory._kit import (
    Guard,
    NotReady,
    ProviderUnavailable,
    RemoteProvider,
    Session,
    erase_user_dir,
)

from . import _config, _deps, _ops, _render, _tools
from ._buffer import Buffer
from ._client import HindsightAPI
from ._guard import make_guard

logger = logging.getLogger(__name__)

CACHE_MAX_AGE = 7 * 86400.0
"""How old the warm recall may be and still stand in for a live one (it is the person's own)."""
MAX_PENDING_CHARS = 32000
"""Characters of a session's waiting turns that seal a part even before ``buffer_turns``."""

_TOOLS_TEXT = (
    "hindsight_recall searches it; hindsight_retain stores something worth keeping now; "
    "hindsight_reflect thinks over everything remembered to answer a question."
)
_BLOCKS = {
    "hybrid": "You have a long-term memory of each person (Hindsight): what it recalls for a "
    "message arrives with that message, and each conversation is remembered when it ends. "
    + _TOOLS_TEXT,
    "context": "You have a long-term memory of each person (Hindsight): what it recalls for a "
    "message arrives with that message, and each conversation is remembered when it ends.",
    "tools": "You have a long-term memory of each person (Hindsight); each conversation is "
    "remembered when it ends. " + _TOOLS_TEXT,
}


class HindsightProvider(RemoteProvider):
    """Hindsight (``pip install 'chorus[hindsight]'``) on a server at ``base_url``.

    ``clock``, ``failure_threshold`` and ``cooldown`` set the circuit breaker;
    ``environ`` replaces ``os.environ`` as the fallback for missing settings.
    """

    local_state = "the turns it buffers until they are retained (hindsight.db)"
    provider_name = _config.PROVIDER_NAME
    dependency = _deps.LIBRARY
    config_schema = _config.SCHEMA
    tool_schemas = _tools.SCHEMAS

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._settings = _config.Settings()
        self._api: HindsightAPI | None = None
        self._platform = ""
        self._buffers: dict[str, Buffer] = {}

    def make_guard(self, breaker: CircuitBreaker) -> Guard:
        return make_guard(breaker)

    @property
    def settings(self) -> _config.Settings:
        return self._settings

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Read the settings and import the client; no network (a dead server is not fatal)."""
        session = Session.of(session_id, kwargs)
        settings = _config.parse(kwargs.get("config"), self._environ)
        api = HindsightAPI(_deps.load(), settings)
        with self._lock:
            self.start_session(session)
            self._api, self._settings = api, settings
            self._platform = session.platform
            self._buffers = {}
        logger.debug("hindsight provider ready for session %s (%s)", session_id, self._context)

    # -- plumbing ------------------------------------------------------------

    def is_ready(self) -> bool:
        return self._home is not None and self._api is not None

    def _ready(self) -> HindsightAPI:
        with self._lock:
            if self._api is None or not self.is_ready():
                raise NotReady("the hindsight provider is not initialised")
            return self._api

    def _buffer(self, user_key: str) -> Buffer:
        self._ready()
        with self._lock:
            assert self._home is not None
            buffer = self._buffers.get(user_key)
            if buffer is None:
                buffer = Buffer(provider_dir(self._home, _config.PROVIDER_NAME, user_key))
                self._buffers[user_key] = buffer
            return buffer

    def _recall(self, owners: list[str], query: str, timeout: float, max_tokens: int) -> str:
        """What the banks of ``owners`` recall (a linked person's accounts' banks too)."""
        api, settings = self._ready(), self._settings
        memories = []
        for owner in owners:
            call = partial(
                api.recall,
                settings.bank_id(owner),
                query,
                timeout=timeout,
                max_tokens=max_tokens,
                budget=settings.recall_budget,
            )
            memories += self.guard.run("recall", call)
        return _render.recall_text(memories)

    # -- recall --------------------------------------------------------------

    def system_prompt_block(self) -> str:
        return _BLOCKS[self._settings.recall_mode]

    def prefetch(self, query: str, *, session_id: str = "", speaker: str | None = None) -> str:
        text = strip_memory_context(query).strip()
        if not text or not self._settings.injects:
            return ""
        owners = self.recall_keys(speaker)
        owner = owners[0]
        settings = self._settings
        if not self.guard.paused:
            try:
                recalled = self._recall(
                    owners, text, settings.recall_timeout, settings.recall_max_tokens
                )
                logger.debug("hindsight prefetch for %s: %s", loggable(text), loggable(recalled))
                return recalled
            except ProviderUnavailable:
                pass
        logger.debug("hindsight prefetch: using the warm recall")
        return self._buffer(owner).cached_recall(settings.bank_id(owner), CACHE_MAX_AGE)

    def queue_prefetch(
        self, query: str, *, session_id: str = "", speaker: str | None = None
    ) -> None:
        text = strip_memory_context(query).strip()
        if not text or self.guard.paused or not self._settings.injects:
            return
        owners = self.recall_keys(speaker)
        settings = self._settings
        recalled = self._recall(owners, text, settings.timeout, settings.recall_max_tokens)
        self._buffer(owners[0]).store_recall(settings.bank_id(owners[0]), recalled)

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
        turn = self.turn(user_content, assistant_content, session_id, speaker)
        if turn is None:
            return
        bank = self._settings.bank_id(turn.owner)
        session = turn.session_id
        buffer = self._buffer(self._user_key)
        if not buffer.add(session, bank, turn.owner, turn.user, turn.assistant):
            logger.debug("hindsight sync_turn of session %s: turn already buffered", session)
        count, chars = buffer.pending(session).get(bank, (0, 0))
        if count >= self._settings.buffer_turns or chars >= MAX_PENDING_CHARS:
            buffer.seal(session, bank)
        self._retain_sealed(buffer)

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        """Retain what the session said as one document per bank (and anything left over)."""
        if self._context == "flush":
            return
        buffer = self._buffer(self._user_key)
        buffer.seal(self._session_id)
        self._retain_sealed(buffer)

    def _retain_sealed(self, buffer: Buffer) -> None:
        _ops.retain_sealed(self._ready(), self.guard, self._settings, buffer, self._platform)

    def on_session_switch(
        self,
        new_session_id: str,
        *,
        parent_session_id: str = "",
        reset: bool = False,
        rewound: bool = False,
        **kwargs: Any,
    ) -> None:
        """A reset moves to the new session; a withdrawn turn leaves the buffer (and its part)."""
        if self.follow_reset(new_session_id, reset):
            return
        withdrawn = withdrawn_turn(rewound, kwargs)
        if withdrawn is None or self._context != "background":
            return
        buffer = self._buffer(self._user_key)
        for session in dict.fromkeys((new_session_id, self._session_id)):
            reopened = buffer.withdraw(session, withdrawn.user, withdrawn.assistant)
            if reopened is not None:
                self._retain_sealed(buffer)
                return

    # -- tools ---------------------------------------------------------------

    def offers_tools(self) -> bool:
        return self._settings.has_tools

    def run_tool(
        self, tool_name: str, args: dict[str, Any], call: Mapping[str, Any]
    ) -> dict[str, Any]:
        return self._tool(tool_name, args, call.get("speaker"))

    def _tool(self, name: str, args: dict[str, Any], speaker: Any) -> dict[str, Any]:
        api, settings = self._ready(), self._settings
        banks = [settings.bank_id(owner) for owner in self.recall_keys(speaker)]
        return _ops.run_tool(api, self.guard, settings, banks, name, args)

    # -- teardown and configuration ------------------------------------------

    # -- a person's data -----------------------------------------------------

    def export_user(self, user_id: str) -> dict[str, Any] | None:
        """Every memory unit of the person's bank."""
        api, settings = self._ready(), self._settings
        bank = settings.bank_id(user_id)
        found = self.guard.run("list", partial(api.list_all, bank, timeout=settings.timeout))
        return {"bank": bank, "memories": found}

    def forget_user(self, user_id: str) -> ForgetResult:
        """Delete the person's bank (memories, entities, documents) and their buffer."""
        api, settings = self._ready(), self._settings
        bank = settings.bank_id(user_id)
        removed = self.guard.run("delete", partial(api.delete_bank, bank, timeout=settings.timeout))
        with self._lock:
            self._buffers.pop(user_id, None)
            assert self._home is not None
            home = self._home
        erase_user_dir(home, _config.PROVIDER_NAME, user_id)
        left = self.guard.run("list", partial(api.list_all, bank, timeout=settings.timeout))
        if left:
            return ForgetResult(False, f"Hindsight still lists {len(left)} of their memories")
        return ForgetResult(erased=True, removed=removed)

    def shutdown(self) -> None:
        """Nothing to flush: the buffer is on disk, and every call closes its own client."""
        with self._lock:
            self._api = None

"""The OpenViking provider: per-session batches committed at session end, recall, six tools.

Calls by context (see :mod:`memory.providers`):

* ``sync_turn`` (``"background"``) appends the turn to the speaker's durable
  batch (:mod:`._batch`), no network: a dead server never fails a turn's job;
* ``on_session_end`` (``"background"``) seals the session's batches and commits
  each as one OpenViking session; a failed commit leaves its marker and raises
  (the job is retried), and every later background call
  (``sync_turn``, ``queue_prefetch``, ``on_session_end``) first commits the
  unfinished markers it finds, so a commit cut short by a crash is finished;
* ``prefetch`` (``"primary"``) searches with a short timeout and falls back to
  the recall ``queue_prefetch`` cached in the user's directory after the last
  turn; ``initialize`` never touches the network.

Isolation: the OpenViking user of a call is its ``speaker`` when given (a group
chat), else the session's ``user_key``; every request names it
(:func:`._ops.ov_user`, the server in ``trusted`` auth mode) and every URI a
tool or a search result may use lies in that user's own
``viking://user/<id>/`` space, where the server lets only that user in.
Logs carry no message or memory text above DEBUG; the API key is never logged.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memory.log_content import loggable
from memory.providers import ForgetResult, provider_dir, strip_memory_context, withdrawn_turn
from plugins.memory._kit import NotReady, ProviderError, RemoteProvider, Session, erase_user_dir

from . import _config, _deps, _erase, _ops, _tools
from ._batch import Batches, Message, turn_id
from ._client import Client

logger = logging.getLogger(__name__)

PREFETCH_TIMEOUT = 2.0
"""The bound of prefetch's own search (the turn itself waits only ``memory.prefetch_timeout``)."""
WARM_MAX_AGE = 900.0

SYSTEM_PROMPT_BLOCK = (
    "You have an OpenViking context database of each person: what it recalls for a "
    "message arrives with that message, and each session is committed to it when it "
    "ends. viking_search, viking_list and viking_read look things up; viking_remember "
    "stores a fact now; viking_forget removes a memory; viking_commit commits the "
    "conversation so far."
)


class OpenVikingProvider(RemoteProvider):
    """OpenViking over its REST API (``pip install 'chorus[openviking]'``)."""

    local_state = "the turns it batches until they are sent"
    provider_name = _config.PROVIDER_NAME
    dependency = _deps.LIBRARY
    config_schema = _config.SCHEMA
    tool_schemas = _tools.SCHEMAS
    backend_label = "OpenViking"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.settings = _config.Settings()
        self._client: Client | None = None
        self._batches: Batches | None = None
        self._owners: set[str] = set()

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        session = Session.of(session_id, kwargs)
        settings = _config.parse(kwargs.get("config"), self._environ)
        client = Client(settings, self.guard)
        with self._lock:
            self.shutdown()
            self.start_session(session)
            self._client, self.settings = client, settings
            self._batches = Batches(session.home)
            self._owners = {session.user_key}
        logger.debug("openviking provider ready for session %s (%s)", session_id, self._context)

    # -- plumbing ------------------------------------------------------------

    def is_ready(self) -> bool:
        return self._home is not None and self._client is not None and self._batches is not None

    def _ready(self) -> tuple[Path, Client, Batches]:
        with self._lock:
            if self._home is None or self._client is None or self._batches is None:
                raise NotReady("the openviking provider is not initialised")
            return self._home, self._client, self._batches

    def _resume(self) -> None:
        """Commit the markers a crashed or failed commit left; quietly, it is retried later."""
        _, client, batches = self._ready()
        if not self.breaker.allow():
            return
        try:
            done = _ops.resume(client, batches)
        except ProviderError as exc:
            logger.info("openviking: an unfinished commit waits (%s)", type(exc).__name__)
            return
        if done:
            logger.info("openviking: finished %d interrupted commit(s)", done)

    # -- recall --------------------------------------------------------------

    def system_prompt_block(self) -> str:
        return SYSTEM_PROMPT_BLOCK

    def prefetch(self, query: str, *, session_id: str = "", speaker: str | None = None) -> str:
        text = strip_memory_context(query).strip()
        if not text:
            return ""
        home, client, _ = self._ready()
        owners = self.recall_keys(speaker)
        cached = _ops.cached_recall(provider_dir(home, self.name, owners[0]), WARM_MAX_AGE)
        if not self.breaker.allow():
            return cached
        timeout = min(self.settings.timeout, PREFETCH_TIMEOUT)
        limit = _config.SEARCH_LIMIT
        try:
            found = _ops.search_all(client, owners, text, limit, timeout=timeout)
        except ProviderError:
            return cached
        logger.debug("openviking prefetch for %s: %d hits", loggable(text), len(found))
        return _ops.format_recall(found)

    def queue_prefetch(
        self, query: str, *, session_id: str = "", speaker: str | None = None
    ) -> None:
        text = strip_memory_context(query).strip()
        if not text or not self.breaker.allow():
            return
        home, client, _ = self._ready()
        self._resume()
        owners = self.recall_keys(speaker)
        found = _ops.search_all(client, owners, text, _config.SEARCH_LIMIT)
        _ops.store_recall(provider_dir(home, self.name, owners[0]), _ops.format_recall(found))

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
        _, _, batches = self._ready()
        user, assistant, owner = prepared.user, prepared.assistant, prepared.owner
        session = prepared.session_id
        turn: list[Message] = [
            {"role": role, "content": content}
            for role, content in (("user", user), ("assistant", assistant))
            if content
        ]
        added = batches.append(owner, session, turn_id(session, user, assistant), turn)
        self._owners.add(owner)
        logger.debug("openviking sync_turn of session %s: %s", session, "added" if added else "dup")
        self._resume()

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        """Seal every batch of this session and commit them (see the module docstring)."""
        _, client, batches = self._ready()
        owners = set(self._owners)
        for message in messages or []:
            speaker = message.get("speaker") if isinstance(message, dict) else None
            if isinstance(speaker, str) and speaker:
                owners.add(self.owner(speaker))
        for owner in sorted(owners):
            batches.seal(owner, self._session_id)
        _ops.resume(client, batches)  # raises while the server fails: the job is retried

    def on_session_switch(
        self,
        new_session_id: str,
        *,
        parent_session_id: str = "",
        reset: bool = False,
        rewound: bool = False,
        **kwargs: Any,
    ) -> None:
        if self.follow_reset(new_session_id, reset):
            return
        withdrawn = withdrawn_turn(rewound, kwargs)
        if withdrawn is None or self._context == "flush":
            return
        _, _, batches = self._ready()
        owner = self.owner(withdrawn.speaker)
        session = new_session_id or self._session_id
        if batches.withdraw(owner, session, turn_id(session, withdrawn.user, withdrawn.assistant)):
            logger.debug("openviking dropped a withdrawn turn of session %s", session)
        else:  # committed already (viking_commit): OpenViking keeps what it archived
            logger.debug("openviking: a withdrawn turn of session %s was not in its batch", session)

    # -- tools ---------------------------------------------------------------

    def run_tool(
        self, tool_name: str, args: dict[str, Any], call: Mapping[str, Any]
    ) -> dict[str, Any]:
        _, client, batches = self._ready()
        owners = self.recall_keys(call.get("speaker"))
        session = str(call.get("session_id") or self._session_id)
        return _ops.run_tool(client, batches, owners, session, tool_name, args)

    # -- teardown and configuration ------------------------------------------

    # -- a person's data -----------------------------------------------------

    def export_user(self, user_id: str) -> dict[str, Any] | None:
        """The memories OpenViking extracted for the person, and their sessions' ids."""
        _, client, _ = self._ready()
        return _erase.export(client, _ops.ov_user(user_id))

    def forget_user(self, user_id: str) -> ForgetResult:
        """Delete the person's sessions and memories on the server, and their local batches."""
        home, client, _ = self._ready()
        removed, left = _erase.forget(client, _ops.ov_user(user_id))
        erase_user_dir(home, _config.PROVIDER_NAME, user_id)
        if left:
            return ForgetResult(False, f"OpenViking still lists {len(left)} of their entries")
        return ForgetResult(erased=True, removed=removed)

    def shutdown(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

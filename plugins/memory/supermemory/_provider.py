"""The Supermemory provider: profile recall before a turn, sessions ingested at their end, tools.

Isolation: every call acts in one container tag, that of its ``speaker`` when
given (a group chat session) else of the session's ``user_key``
(:func:`~._tags.container_tag`, injective); Supermemory scopes searches,
profiles and forgets to that tag.

Writes: ``sync_turn`` (``"background"``) only appends the turn to the durable
buffer on disk (:mod:`._buffer`), so a slow or dead Supermemory never holds up
the turn's jobs; ``on_session_end`` ingests the session as one conversation
per speaker (``POST /v4/conversations``), with an id derived from session and
tag so a repeated job updates rather than duplicates. What cannot be ingested
stays on disk and is tried again at the user's next session end. A write of
the built-in ``memory`` tool (``on_memory_write``) is added as a document,
its ``customId`` derived from tag, file and text; one Supermemory does not
take is logged (WARNING, without its text) and stays in the built-in memory only.

Recall: ``prefetch`` asks for the person's profile (lasting and recent facts)
with the memories matching the message, in one call with a short timeout
(:data:`PREFETCH_TIMEOUT`); when Supermemory is slow, failing or paused by the
breaker it answers with the recall ``queue_prefetch`` warmed after the last
turn. Nothing here raises to the turn for a backend failure; logs carry no
memory text above DEBUG.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memory.log_content import loggable
from memory.providers import ForgetResult, provider_dir, strip_memory_context, withdrawn_turn
from plugins.memory._kit import (
    BadConfig,
    NotReady,
    ProviderUnavailable,
    RemoteProvider,
    Session,
    erase_user_dir,
)

from . import _config, _deps, _tools
from ._buffer import Turn, UserBuffer, turn_name
from ._client import Client, Hit, Profile, Rejected
from ._ingest import format_recall, ingest_pending
from ._tags import container_tag

logger = logging.getLogger(__name__)

PREFETCH_TIMEOUT = 2.0
"""Seconds a prefetch search may take before the warm recall is used."""
WARM_MAX_AGE = 900.0
MAX_RECALL_QUERY = 1000
"""Characters of the message the recall searches with."""

SYSTEM_PROMPT_BLOCK = (
    "You have a long-term memory of each person (Supermemory): what it recalls for a message "
    "arrives with that message. supermemory_search looks things up, supermemory_store keeps "
    "one durable fact, supermemory_forget removes a memory by its id, supermemory_profile "
    "shows what is known about the person."
)

_FAILURES = (ProviderUnavailable, Rejected)


def _profile(
    client: Client, whose: list[str], query: str | None, timeout: float | None = None
) -> Profile:
    """The profiles of the tags of ``whose`` as one (a linked person's accounts' too)."""
    static: list[str] = []
    dynamic: list[str] = []
    hits: list[Hit] = []
    for who in whose:
        profile = client.profile(container_tag(who), query, timeout=timeout)
        static += profile.static
        dynamic += profile.dynamic
        hits += profile.hits
    return Profile(static, dynamic, hits)


class SupermemoryProvider(RemoteProvider):
    """Supermemory through its SDK (``pip install 'chorus[supermemory]'``).

    ``clock``, ``failure_threshold`` and ``cooldown`` set the circuit breaker;
    ``environ`` replaces ``os.environ`` as the fallback for missing settings.
    """

    local_state = "the turns it buffers until they are sent"
    provider_name = _config.PROVIDER_NAME
    dependency = _deps.LIBRARY
    config_schema = _config.SCHEMA
    tool_schemas = _tools.SCHEMAS

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._client: Client | None = None

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        session = Session.of(session_id, kwargs)
        settings = _config.parse(kwargs.get("config"), self._environ)
        if not settings.api_key:
            raise BadConfig(f"supermemory needs an API key: set {_config.API_KEY_ENV}")
        client = Client(_deps.LIBRARY.load(), settings, self.guard)
        with self._lock:
            self.shutdown()
            self.start_session(session)
            self._client = client
        logger.debug("supermemory provider ready for session %s (%s)", session_id, self._context)

    # -- plumbing ------------------------------------------------------------

    def is_ready(self) -> bool:
        return self._home is not None and self._client is not None

    def _ready(self) -> tuple[Path, Client]:
        with self._lock:
            if self._home is None or self._client is None:
                raise NotReady("the supermemory provider is not initialised")
            return self._home, self._client

    def _buffer(self, user_key: str) -> UserBuffer:
        home, _ = self._ready()
        return UserBuffer(provider_dir(home, _config.PROVIDER_NAME, user_key))

    # -- recall --------------------------------------------------------------

    def system_prompt_block(self) -> str:
        return SYSTEM_PROMPT_BLOCK

    def prefetch(self, query: str, *, session_id: str = "", speaker: str | None = None) -> str:
        text = strip_memory_context(query).strip()
        if not text:
            return ""
        _, client = self._ready()
        whose = self.recall_keys(speaker)
        who, tag = whose[0], container_tag(whose[0])
        try:
            profile = _profile(client, whose, text[:MAX_RECALL_QUERY], PREFETCH_TIMEOUT)
        except _FAILURES:
            logger.debug("supermemory prefetch: backend unavailable, using the warm recall")
            return self._buffer(who).warm(tag, WARM_MAX_AGE)
        logger.debug(
            "supermemory prefetch for %s: %d facts, %d hits",
            loggable(text),
            len(profile.static) + len(profile.dynamic),
            len(profile.hits),
        )
        return format_recall(profile)

    def queue_prefetch(
        self, query: str, *, session_id: str = "", speaker: str | None = None
    ) -> None:
        text = strip_memory_context(query).strip()
        if not text or self.guard.paused:
            return
        _, client = self._ready()
        whose = self.recall_keys(speaker)
        who, tag = whose[0], container_tag(whose[0])
        try:
            profile = _profile(client, whose, text[:MAX_RECALL_QUERY])
        except _FAILURES as exc:
            logger.debug("supermemory queue_prefetch skipped: %s", type(exc).__name__)
            return
        self._buffer(who).store_warm(tag, format_recall(profile))

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
        user, assistant = prepared.user, prepared.assistant
        who, session = prepared.owner, prepared.session_id
        turn = Turn(turn_name(session, who, user, assistant), session, who, user, assistant)
        added = self._buffer(self._user_key).append(turn)
        logger.debug("supermemory buffered a turn of session %s (new: %s)", session, added)

    def on_memory_write(
        self,
        action: str,
        target: str,
        content: str,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """An add or replace of the built-in memory becomes a document (removals stay local)."""
        text = strip_memory_context(content or "").strip()[: _tools.MAX_CONTENT]
        if action not in ("add", "replace") or not text or self._context == "background":
            return
        _, client = self._ready()
        speaker = (metadata or {}).get("speaker")
        tag = container_tag(self.owner(speaker if isinstance(speaker, str) else None))
        digest = hashlib.sha256(f"{tag}\0{target}\0{text}".encode()).hexdigest()[:40]
        try:
            client.add(
                tag,
                text,
                custom_id=f"chorus_m_{digest}",
                metadata={"source": "chorus_memory", "target": target},
            )
        except _FAILURES as exc:
            logger.warning("supermemory could not mirror a memory write: %s", exc)
            return
        logger.debug("supermemory mirrored a %s of %s", action, target)

    def on_session_switch(
        self,
        new_session_id: str,
        *,
        parent_session_id: str = "",
        reset: bool = False,
        rewound: bool = False,
        **kwargs: Any,
    ) -> None:
        """A reset moves on to the new session; ``/undo`` drops the withdrawn turn's buffer line."""
        if self.follow_reset(new_session_id, reset):
            return
        withdrawn = withdrawn_turn(rewound, kwargs)
        if withdrawn is None:
            return
        who = self.owner(withdrawn.speaker) if withdrawn.speaker else None
        buffer = self._buffer(self._user_key)
        for session in dict.fromkeys((new_session_id or self._session_id, self._session_id)):
            if buffer.remove_last(session, withdrawn.user, withdrawn.assistant, who):
                logger.debug("supermemory dropped a withdrawn turn of session %s", session)
                return

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        """Ingest the ended session (and any earlier one left over) as one memory per speaker."""
        if self._context == "flush":
            return
        _, client = self._ready()
        buffer = self._buffer(self._user_key)
        buffer.close_session(self._session_id)
        ingest_pending(client, buffer)

    # -- tools ---------------------------------------------------------------

    def _run_tool(self, name: str, args: dict[str, Any], whose: list[str]) -> dict[str, Any]:
        """A write or forget in the owner's tag (``whose[0]``); a search or profile in
        each tag of ``whose`` (a linked person's accounts' too)."""
        _, client = self._ready()
        tag = container_tag(whose[0])
        if name == _tools.STORE:
            content = _tools.content_arg(args)
            digest = hashlib.sha256(f"{tag}\0{content}".encode()).hexdigest()[:40]
            document_id = client.add(
                tag, content, custom_id=f"chorus_f_{digest}", metadata={"source": "chorus_tool"}
            )
            return {"document_id": document_id, "memory": content}
        if name == _tools.SEARCH:
            query = _tools.query_arg(args)
            limit = _tools.limit_arg(args, _config.SEARCH_LIMIT)
            hits = [hit for who in whose for hit in client.search(container_tag(who), query, limit)]
            return {"results": [h.public() for h in hits], "count": len(hits)}
        if name == _tools.FORGET:
            memory_id = _tools.memory_id_arg(args)
            if not client.forget(tag, memory_id):
                raise _tools.ToolError(f"no memory with id {memory_id} belongs to this person")
            return {"id": memory_id, "forgotten": True}
        query = _tools.query_arg(args, optional=True)
        profile = _profile(client, whose, query or None)
        result: dict[str, Any] = {"static": profile.static, "dynamic": profile.dynamic}
        if query:
            result["results"] = [h.public() for h in profile.hits]
        return result

    def run_tool(
        self, tool_name: str, args: dict[str, Any], call: Mapping[str, Any]
    ) -> dict[str, Any]:
        return self._run_tool(tool_name, args, self.recall_keys(call.get("speaker")))

    # -- teardown and configuration ------------------------------------------

    # -- a person's data -----------------------------------------------------

    def export_user(self, user_id: str) -> dict[str, Any] | None:
        """The documents and conversations in the person's container tag, and their profile."""
        _, client = self._ready()
        tag = container_tag(user_id)
        profile = client.profile(tag)
        return {
            "container_tag": tag,
            "memories": client.documents(tag),
            "profile": {"static": profile.static, "dynamic": profile.dynamic},
        }

    def forget_user(self, user_id: str) -> ForgetResult:
        """Delete every document of the person's container tag, and their buffer."""
        home, client = self._ready()
        tag = container_tag(user_id)
        removed = client.delete_all(tag)
        erase_user_dir(home, _config.PROVIDER_NAME, user_id)
        left = client.documents(tag)
        if left:
            return ForgetResult(False, f"Supermemory still lists {len(left)} of their documents")
        return ForgetResult(erased=True, removed=removed)

    def shutdown(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

"""The RetainDB provider: every write through the durable queue, recall, eight tools.

Writes never wait on the server to be safe: ``sync_turn`` (``"background"``)
and ``on_memory_write`` (``"primary"``, a mirror of the built-in ``memory``
tool's adds and replaces) put the write in ``queue.db`` (:mod:`._queue`) and
return once it is committed there; the queue is then drained, inline for
``sync_turn`` (bounded by the timeout), on a daemon thread for
``on_memory_write`` so a turn never waits. ``initialize`` starts a drain of
whatever an earlier, perhaps killed, process left, also on a thread. A turn is
stored as one ``event`` memory (``POST /v1/memory``); its key is a hash of its
user, session and texts (a re-run job finds its row already queued), so one
exchange repeated word for word in one session is kept once. A write sent
without an answer is looked up on the server before it is sent again.

``on_session_end`` hands the whole conversation to RetainDB
(``POST /v1/memory/ingest/session``, through the same queue) so the service
can extract what is worth keeping; in a group each speaker's part goes to
their own memory.

``/undo`` (``on_session_switch`` with ``withdrawn_turn``) takes the turn back:
dropped from the queue if it was not sent, else deleted on the server by the
memory id it was given, through the same durable queue.

``prefetch`` (``"primary"``) asks RetainDB's context query for the message and
adds the person's profile, with a short timeout, falling back to the recall
``queue_prefetch`` (``"background"``) cached for that user.

Isolation: the RetainDB user of a call is its ``speaker`` when given (a group
chat), else the session's ``user_key``; it is the ``user_id`` of every memory
call, files live under a path of that user's own, a memory is deleted by a
tool only when the server showed it as that user's, and cached recall is keyed
by it. Logs carry no memory text above DEBUG and never the API key.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from typing import Any

from memory.log_content import loggable
from memory.providers import ForgetResult, provider_dir, strip_memory_context, withdrawn_turn
from plugins.memory._kit import BadConfig, NotReady, ProviderError, RemoteProvider, Session

from . import _config, _deps, _erase, _ingest, _ops, _tools
from ._client import Client
from ._queue import WriteQueue

logger = logging.getLogger(__name__)

PREFETCH_TIMEOUT = 2.0
WARM_MAX_AGE = 900.0
TURN_IMPORTANCE = 0.5
MIRROR_IMPORTANCE = 0.7
DRAIN_JOIN = 5.0
"""How long ``shutdown`` waits for a running drain thread."""

SYSTEM_PROMPT_BLOCK = (
    "You have a RetainDB memory of each person: what it recalls for a message arrives "
    "with that message. retaindb_search looks things up, retaindb_profile gives the "
    "person's stable profile, retaindb_context what matters for a task, retaindb_remember "
    "stores a fact, retaindb_forget removes one by id; retaindb_file_put, retaindb_file_get "
    "and retaindb_file_list keep small text files for the person."
)


class RetainDBProvider(RemoteProvider):
    """RetainDB over REST (``pip install 'chorus[retaindb]'``)."""

    local_state = "its queue of writes not yet sent (queue.db)"
    provider_name = _config.PROVIDER_NAME
    dependency = _deps.LIBRARY
    config_schema = _config.SCHEMA
    tool_schemas = _tools.SCHEMAS
    backend_label = "RetainDB"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.settings = _config.Settings()
        self._client: Client | None = None
        self.queue: WriteQueue | None = None
        self._drainer: threading.Thread | None = None

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        session = Session.of(session_id, kwargs)
        settings = _config.parse(kwargs.get("config"), self._environ)
        if not settings.api_key:
            raise BadConfig("retaindb needs an API key: set RETAINDB_API_KEY")
        client = Client(settings, self.guard)
        queue = WriteQueue(provider_dir(session.home, self.name))
        with self._lock:
            self.shutdown()
            self.start_session(session)
            self._client, self.queue, self.settings = client, queue, settings
        if queue.size():
            self._drain_later()  # replay what an earlier process left
        logger.debug("retaindb provider ready for session %s (%s)", session_id, self._context)

    # -- plumbing ------------------------------------------------------------

    def is_ready(self) -> bool:
        return self._client is not None and self.queue is not None

    def _ready(self) -> tuple[Client, WriteQueue]:
        with self._lock:
            if self._client is None or self.queue is None:
                raise NotReady("the retaindb provider is not initialised")
            return self._client, self.queue

    def _drain_quietly(self) -> None:
        try:
            client, queue = self._ready()
            sent = _ops.drain(client, queue, wait=DRAIN_JOIN)
        except Exception as exc:  # rows stay queued for the next drain
            logger.info("retaindb drain stopped (%s)", type(exc).__name__)
            return
        if sent:
            logger.debug("retaindb sent %d queued write(s)", sent)

    def _drain_later(self) -> None:
        with self._lock:
            if self._drainer is not None and self._drainer.is_alive():
                return
            self._drainer = threading.Thread(
                target=self._drain_quietly, name="retaindb-drain", daemon=True
            )
            self._drainer.start()

    def flush(self, timeout: float = 30.0) -> int:
        """Wait for a running drain, drain once more, and return how many writes remain."""
        drainer = self._drainer
        if drainer is not None:
            drainer.join(timeout)
        client, queue = self._ready()
        _ops.drain(client, queue, wait=timeout, deadline=timeout)
        return queue.size()

    # -- recall --------------------------------------------------------------

    def system_prompt_block(self) -> str:
        return SYSTEM_PROMPT_BLOCK

    def prefetch(self, query: str, *, session_id: str = "", speaker: str | None = None) -> str:
        text = strip_memory_context(query).strip()
        if not text:
            return ""
        client, queue = self._ready()
        users = self.recall_keys(speaker)
        user = users[0]
        if not self.breaker.allow():
            return queue.cached_recall(user, WARM_MAX_AGE)
        timeout = min(self.settings.timeout, PREFETCH_TIMEOUT)
        session = session_id or self._session_id
        try:
            recalled = _ops.recall(client, queue, users, text, session=session, timeout=timeout)
        except ProviderError:
            return queue.cached_recall(user, WARM_MAX_AGE)
        logger.debug("retaindb prefetch for %s: %d chars", loggable(text), len(recalled))
        return recalled

    def queue_prefetch(
        self, query: str, *, session_id: str = "", speaker: str | None = None
    ) -> None:
        text = strip_memory_context(query).strip()
        if not text or not self.breaker.allow():
            return
        client, queue = self._ready()
        users = self.recall_keys(speaker)
        session = session_id or self._session_id
        queue.store_recall(users[0], _ops.recall(client, queue, users, text, session=session))

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
        client, queue = self._ready()
        said, answer, user = prepared.user, prepared.assistant, prepared.owner
        session = prepared.session_id
        content = "\n".join(
            f"{who}: {text}" for who, text in (("User", said), ("Assistant", answer)) if text
        )
        payload = {
            "content": content,
            "memory_type": "event",
            "importance": TURN_IMPORTANCE,
            "session_id": session,
            "kind": "turn",
        }
        idem = _ops.turn_key(queue, user, session, said, answer)
        sent = _ops.queue_and_send(client, queue, idem, user, "memory", payload)
        logger.debug("retaindb sync_turn of session %s: %s", session, "sent" if sent else "queued")

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        """Hand the ended conversation to RetainDB, each speaker's part to their memory."""
        if self._context == "flush" or not isinstance(messages, list):
            return
        client, queue = self._ready()
        session = self._session_id
        for user, said in _ingest.by_speaker(messages, self._user_key, self.owner).items():
            idem = _ops.idem_key("session", user, session, json.dumps(said, sort_keys=True))
            payload = {"session_id": session, "messages": said}
            sent = _ops.queue_and_send(client, queue, idem, user, "session", payload)
            logger.debug(
                "retaindb ingest of session %s (%d messages): %s",
                session,
                len(said),
                "sent" if sent else "queued",
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
        """A reset moves on to the new session; ``/undo`` takes the withdrawn turn back."""
        if self.follow_reset(new_session_id, reset):
            return
        withdrawn = withdrawn_turn(rewound, kwargs)
        if withdrawn is None or self._context == "flush":
            return
        client, queue = self._ready()
        user = self.owner(withdrawn.speaker)
        session = new_session_id or self._session_id
        outcome = _ops.withdraw_turn(
            client, queue, user, session, withdrawn.user, withdrawn.assistant
        )
        logger.debug("retaindb withdrew a turn of session %s: %s", session, outcome)

    def on_memory_write(
        self,
        action: str,
        target: str,
        content: str,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """Mirror an add or replace of the built-in memory (removals stay local)."""
        text = strip_memory_context(content or "").strip()
        if action not in ("add", "replace") or not text or self._context == "background":
            return
        _, queue = self._ready()
        speaker = (metadata or {}).get("speaker")
        user = self.owner(speaker if isinstance(speaker, str) else None)
        payload = {
            "content": text,
            "memory_type": "preference" if target == "user" else "factual",
            "importance": MIRROR_IMPORTANCE,
            "session_id": self._session_id,
            "kind": "memory",
        }
        queue.enqueue(_ops.idem_key("memory", user, target, text), user, "memory", payload)
        self._drain_later()

    # -- tools ---------------------------------------------------------------

    def run_tool(
        self, tool_name: str, args: dict[str, Any], call: Mapping[str, Any]
    ) -> dict[str, Any]:
        client, queue = self._ready()
        users = self.recall_keys(call.get("speaker"))
        return _tools.run_tool(client, queue, users, self._session_id, tool_name, args)

    # -- teardown and configuration ------------------------------------------

    # -- a person's data -----------------------------------------------------

    def export_user(self, user_id: str) -> dict[str, Any] | None:
        """The person's RetainDB memories (their profile) and their files."""
        client, queue = self._ready()
        return _erase.export(client, queue, user_id)

    def forget_user(self, user_id: str) -> ForgetResult:
        """Delete the person's memories and files on RetainDB, and their rows of the queue."""
        client, queue = self._ready()
        removed, left = _erase.forget(client, queue, user_id)
        if left:
            return ForgetResult(False, f"RetainDB still lists {left} of their memories or files")
        return ForgetResult(erased=True, removed=removed)

    def shutdown(self) -> None:
        with self._lock:
            drainer, self._drainer = self._drainer, None
        if drainer is not None:
            drainer.join(DRAIN_JOIN)
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

"""The ByteRover provider: the ``brv`` CLI per user, curated from turns, queried for recall.

Isolation is by directory: every ``brv`` run has the working directory of one
user key (``speaker`` when given, else the session's ``user_key``) under
``CHORUS_HOME/providers/byterover/users/<platform>/<id>/``, and brv keeps its
context tree in its working directory, so no run for one person can read
another's tree.

Writes: ``sync_turn`` (``"background"``) curates the turn, once (a re-delivered
job finds its hash in ``chorus-synced.txt``); ``on_memory_write`` and
``on_pre_compress`` (``"primary"``) hand their curate to a background thread
(:mod:`._curator`) so the live turn never waits for brv. brv has no delete, so
a turn withdrawn by ``/undo`` after its sync stays curated.

Every run is bounded by ``timeout`` and killed past it (:mod:`._runner`);
prefetch waits only ``prefetch_timeout`` (5 s by default) and then answers with the recall
``queue_prefetch`` warmed. A run whose answer is an error (brv exits 0
then) fails like a non-zero exit: the turn is not marked synced, so the job
retries it. Timeouts and failures count on a circuit breaker, so a broken
brv is left alone for the cooldown. A missing binary makes
``is_available()`` false with the install hint. Nothing raises to the turn.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memory.log_content import loggable
from memory.providers import ForgetResult, provider_dir, strip_memory_context
from plugins.memory._breaker import CircuitBreaker
from plugins.memory._kit import (
    Guard,
    NotReady,
    Paused,
    RemoteProvider,
    Session,
    erase_user_dir,
    user_files,
)

from . import _config, _runner, _state, _tools
from ._curator import Curator
from ._runner import BrvError, BrvFailed, BrvMissing, BrvTimeout

logger = logging.getLogger(__name__)

CONTEXT_TREE = Path(".brv") / "context-tree"
"""Where brv keeps its context tree, in the directory it runs in."""

NO_MATCH = "**Summary**: No matching knowledge found"
"""How brv's answer begins when nothing in the tree matched the question."""
WARM_MAX_AGE = 900.0
MAX_CURATE = 4000
SYSTEM_PROMPT_BLOCK = (
    "You have a ByteRover context tree for each person: what it recalls for a message "
    "arrives with that message. brv_query asks it, brv_curate adds durable knowledge, "
    "brv_status shows its state."
)


class BrvPaused(BrvError, Paused):
    """brv is paused after repeated failures."""


def _turn_text(user: str, assistant: str) -> str:
    lines = [f"User: {user}" if user else "", f"Assistant: {assistant}" if assistant else ""]
    return "\n".join(line for line in lines if line)[:MAX_CURATE]


class ByteRoverProvider(RemoteProvider):
    """ByteRover through ``brv`` (``npm i -g byterover-cli``); no Python dependencies."""

    local_state = "its knowledge tree"
    provider_name = _config.PROVIDER_NAME
    config_schema = _config.SCHEMA
    tool_schemas = _tools.SCHEMAS

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._settings = _config.Settings(binary=_config.default_binary(self._environ))
        self._curator: Curator | None = None

    def make_guard(self, breaker: CircuitBreaker) -> Guard:
        return Guard(self.provider_name, breaker, paused=BrvPaused, own=(BrvTimeout, BrvFailed))

    # -- identity and start-up -----------------------------------------------

    def is_available(self) -> bool:
        return _runner.resolve(self._settings.binary) is not None

    @property
    def unavailable_reason(self) -> str | None:
        if self.is_available():
            return None
        return f"the brv CLI ({self._settings.binary}) is not found: {_config.INSTALL_HINT}"

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        session = Session.of(session_id, kwargs)
        settings = _config.parse(kwargs.get("config"), self._environ)
        if _runner.resolve(settings.binary) is None:
            raise BrvMissing(settings.binary)
        with self._lock:
            self.shutdown()
            self.start_session(session)
            self._settings = settings
        logger.debug("byterover provider ready for session %s (%s)", session_id, self._context)

    # -- plumbing ------------------------------------------------------------

    def _dir(self, user_key: str) -> Path:
        if self._home is None:
            raise NotReady("the byterover provider is not initialised")
        return provider_dir(self._home, _config.PROVIDER_NAME, user_key)

    def _brv(self, user_key: str, args: list[str], timeout: float | None = None) -> dict[str, Any]:
        """One brv run in ``user_key``'s directory, through the guard."""
        self.guard.check()
        wait = min(timeout, self._settings.timeout) if timeout else self._settings.timeout
        directory, binary = self._dir(user_key), self._settings.binary
        return self.guard.run(
            f"brv {args[0]}",
            lambda: _runner.run(binary, args, directory, wait),
            uncounted=(BrvMissing,),
        )

    def _curate(self, user_key: str, text: str) -> None:
        self._brv(user_key, ["curate", text])

    def _query(self, user_key: str, text: str, timeout: float | None = None) -> str:
        """brv's answer to ``text`` (the ``result`` of its JSON answer)."""
        return _runner.text(self._brv(user_key, ["query", text], timeout).get("result"))

    def _recall(self, whose: list[str], text: str, timeout: float | None = None) -> str:
        """brv's answers to ``text`` from the tree of each of ``whose`` (the owner's, then
        those of a linked person's accounts that have one), within ``timeout`` in all.

        A failure of the owner's run raises; an account's is left out.
        """
        budget = timeout or self._settings.timeout
        deadline = time.monotonic() + budget
        answers: list[str] = []
        for n, key in enumerate(whose):
            if n and not (self._dir(key) / CONTEXT_TREE).is_dir():
                continue  # that account never had a tree: nothing to ask brv
            left = deadline - time.monotonic() if n else budget
            if left <= 0:
                break
            try:
                answers.append(self._query(key, text, left))
            except BrvError as exc:
                if not n:
                    raise
                logger.debug("byterover: a linked account's query skipped: %s", type(exc).__name__)
        found = [answer for answer in answers if answer and not answer.startswith(NO_MATCH)]
        return "\n\n".join(found) if found else (answers[0] if answers else "")

    def _background(self, user_key: str, text: str) -> None:
        """Curate now in a job; on a live turn, on the curator thread."""
        if self._context == "background":
            try:
                self._curate(user_key, text)
            except BrvError as exc:
                logger.debug("byterover curate skipped: %s", type(exc).__name__)
            return
        with self._lock:
            if self._curator is None:
                self._curator = Curator(self._curate)
            self._curator.submit(user_key, text)

    # -- recall --------------------------------------------------------------

    def system_prompt_block(self) -> str:
        return SYSTEM_PROMPT_BLOCK

    def prefetch(self, query: str, *, session_id: str = "", speaker: str | None = None) -> str:
        text = strip_memory_context(query).strip()
        if not text:
            return ""
        whose = self.recall_keys(speaker)
        who = whose[0]
        try:
            answer = self._recall(whose, text, self._settings.prefetch_timeout)
        except BrvError as exc:
            logger.debug("byterover prefetch: %s, using the warm recall", type(exc).__name__)
            return _state.warm(self._dir(who), WARM_MAX_AGE)
        logger.debug("byterover prefetch for %s: %s", loggable(text), loggable(answer))
        return answer

    def queue_prefetch(
        self, query: str, *, session_id: str = "", speaker: str | None = None
    ) -> None:
        text = strip_memory_context(query).strip()
        if not text or not self.breaker.allow():
            return
        whose = self.recall_keys(speaker)
        try:
            answer = self._recall(whose, text)
        except BrvError as exc:
            logger.debug("byterover queue_prefetch skipped: %s", type(exc).__name__)
            return
        _state.store_warm(self._dir(whose[0]), answer)

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
        user, assistant, who = prepared.user, prepared.assistant, prepared.owner
        turn = _state.turn_hash(prepared.session_id, who, user, assistant)
        directory = self._dir(who)
        if _state.was_synced(directory, turn):
            return
        self._curate(who, _turn_text(user, assistant))  # a failure lets the job retry
        _state.mark_synced(directory, turn)

    def on_memory_write(
        self, action: str, target: str, content: str, metadata: dict[str, Any] | None = None
    ) -> None:
        if action not in ("add", "replace") or not content.strip():
            return
        speaker = (metadata or {}).get("speaker")
        who = self.owner(speaker if isinstance(speaker, str) else None)
        about = "about this person" if target == "user" else "noted in shared memory"
        self._background(who, f"Memory {about}: {content.strip()}"[:MAX_CURATE])

    def on_pre_compress(self, messages: list[dict[str, Any]]) -> str:
        lines = []
        for message in messages:
            role, content = message.get("role"), message.get("content")
            if role in ("user", "assistant") and isinstance(content, str) and content.strip():
                text = strip_memory_context(content).strip()
                lines.append(f"{'User' if role == 'user' else 'Assistant'}: {text}")
        if lines:
            digest = "Earlier in this conversation:\n" + "\n".join(lines)
            self._background(self._user_key, digest[-MAX_CURATE:])
        return ""

    # -- tools ---------------------------------------------------------------

    def run_tool(
        self, tool_name: str, args: dict[str, Any], call: Mapping[str, Any]
    ) -> dict[str, Any]:
        whose = self.recall_keys(call.get("speaker"))
        who = whose[0]
        if tool_name == _tools.QUERY:
            return {"answer": self._recall(whose, _tools.text_arg(args, "query", _tools.MAX_QUERY))}
        if tool_name == _tools.CURATE:
            self._curate(who, _tools.content_arg(args))
            return {"curated": True}
        return {"status": self._brv(who, ["status"])}

    # -- a person's data -----------------------------------------------------

    def export_user(self, user_id: str) -> dict[str, Any] | None:
        """The files of the person's context tree (brv keeps it in their directory)."""
        directory = self._dir(user_id)
        tree = directory / CONTEXT_TREE
        memories = [
            {"id": str(path.relative_to(directory)), "text": path.read_text("utf-8", "replace")}
            for path in user_files(self._home_path(), _config.PROVIDER_NAME, user_id)
            if tree in path.parents
        ]
        return {"memories": memories}

    def forget_user(self, user_id: str) -> ForgetResult:
        """Remove the person's directory: brv's context tree for them, and chorus's notes.

        chorus never pushes a context tree to ByteRover's cloud, so the directory is all.
        """
        removed = erase_user_dir(self._home_path(), _config.PROVIDER_NAME, user_id)
        return ForgetResult(erased=True, removed=removed)

    def _home_path(self) -> Path:
        if self._home is None:
            raise NotReady("the byterover provider is not initialised")
        return self._home

    # -- teardown and configuration ------------------------------------------

    def shutdown(self) -> None:
        with self._lock:
            curator, self._curator = self._curator, None
        if curator is not None:
            curator.close(self._settings.timeout)

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

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from memory.log_content import loggable
from memory.paths import UserKey
from memory.providers import MemoryProvider, provider_dir, strip_memory_context, withdrawn_turn
from plugins.memory._breaker import DEFAULT_COOLDOWN, DEFAULT_THRESHOLD, CircuitBreaker

from . import _config, _deps, _ops, _tools
from ._batch import Batches, Message, turn_id
from ._client import BackendFailed, Client, NotFound, Paused

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


def _error(message: str) -> str:
    return json.dumps({"success": False, "error": message}, ensure_ascii=False)


class OpenVikingProvider(MemoryProvider):
    """OpenViking over its REST API (``pip install 'chorus[openviking]'``)."""

    local_state = "the turns it batches until they are sent"

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        failure_threshold: int = DEFAULT_THRESHOLD,
        cooldown: float = DEFAULT_COOLDOWN,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.breaker = CircuitBreaker(threshold=failure_threshold, cooldown=cooldown, clock=clock)
        self._environ = environ
        self.settings = _config.Settings()
        self._home: Path | None = None
        self._client: Client | None = None
        self._batches: Batches | None = None
        self._user_key = ""
        self._session_id = ""
        self._context = "primary"
        self._owners: set[str] = set()
        self._lock = threading.RLock()

    @property
    def name(self) -> str:
        return _config.PROVIDER_NAME

    def is_available(self) -> bool:
        return _deps.installed()

    @property
    def unavailable_reason(self) -> str | None:
        return None if self.is_available() else _deps.UNAVAILABLE_REASON

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        home = Path(kwargs["chorus_home"])
        user_key = UserKey.parse(str(kwargs["user_key"])).key
        settings = _config.parse(kwargs.get("config"), self._environ)
        client = Client(settings, self.breaker)
        with self._lock:
            self.shutdown()
            self._home, self._client, self.settings = home, client, settings
            self._batches = Batches(home)
            self._user_key, self._session_id = user_key, session_id
            self._context = str(kwargs.get("agent_context") or "primary")
            self._owners = {user_key}
        logger.debug("openviking provider ready for session %s (%s)", session_id, self._context)

    # -- plumbing ------------------------------------------------------------

    def _ready(self) -> tuple[Path, Client, Batches]:
        with self._lock:
            if self._home is None or self._client is None or self._batches is None:
                raise RuntimeError("the openviking provider is not initialised")
            return self._home, self._client, self._batches

    def _owner(self, speaker: Any = None) -> str:
        if speaker is None or speaker == "":
            return self._user_key
        if not isinstance(speaker, str):
            raise ValueError("speaker must be a user key")
        return UserKey.parse(speaker).key

    def _resume(self) -> None:
        """Commit the markers a crashed or failed commit left; quietly, it is retried later."""
        _, client, batches = self._ready()
        if not self.breaker.allow():
            return
        try:
            done = _ops.resume(client, batches)
        except (BackendFailed, Paused, NotFound) as exc:
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
        owner = self._owner(speaker)
        cached = _ops.cached_recall(provider_dir(home, self.name, owner), WARM_MAX_AGE)
        if not self.breaker.allow():
            return cached
        timeout = min(self.settings.timeout, PREFETCH_TIMEOUT)
        limit = _config.SEARCH_LIMIT
        try:
            found = _ops.search(client, owner, text, limit, timeout=timeout)
        except (BackendFailed, Paused, NotFound):
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
        owner = self._owner(speaker)
        found = _ops.search(client, owner, text, _config.SEARCH_LIMIT)
        _ops.store_recall(provider_dir(home, self.name, owner), _ops.format_recall(found))

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
        if self._context == "flush":
            return
        user = strip_memory_context(user_content or "").strip()
        assistant = strip_memory_context(assistant_content or "").strip()
        if not user and not assistant:
            return
        _, _, batches = self._ready()
        owner = self._owner(speaker)
        session = session_id or self._session_id
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
                owners.add(self._owner(speaker))
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
        if reset and new_session_id:
            self._session_id = new_session_id
            return
        withdrawn = withdrawn_turn(rewound, kwargs)
        if withdrawn is None or self._context == "flush":
            return
        _, _, batches = self._ready()
        owner = self._owner(withdrawn.speaker)
        session = new_session_id or self._session_id
        if batches.withdraw(owner, session, turn_id(session, withdrawn.user, withdrawn.assistant)):
            logger.debug("openviking dropped a withdrawn turn of session %s", session)
        else:  # committed already (viking_commit): OpenViking keeps what it archived
            logger.debug("openviking: a withdrawn turn of session %s was not in its batch", session)

    # -- tools ---------------------------------------------------------------

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [json.loads(json.dumps(schema)) for schema in _tools.SCHEMAS]

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        if not isinstance(args, dict):
            return _error("arguments must be a JSON object")
        if tool_name not in _tools.TOOL_NAMES:
            return _error(f"unknown tool '{tool_name}'")
        try:
            _, client, batches = self._ready()
            owner = self._owner(kwargs.get("speaker"))
            session = str(kwargs.get("session_id") or self._session_id)
            result = _ops.run_tool(client, batches, owner, session, tool_name, args)
        except _tools.ToolError as exc:
            return _error(str(exc))
        except Paused as exc:
            return _error(str(exc))
        except BackendFailed as exc:
            return _error(f"{tool_name} could not run: OpenViking failed ({exc.cause})")
        except NotFound:
            return _error(f"{tool_name}: not found")
        except ValueError:
            return _error("speaker must be a user key such as telegram:12345")
        except RuntimeError:
            return _error("openviking is not ready for this session")
        return json.dumps({"success": True, **result}, ensure_ascii=False)

    # -- teardown and configuration ------------------------------------------

    def shutdown(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def get_config_schema(self) -> list[dict[str, Any]]:
        return [dict(field) for field in _config.SCHEMA]

    def save_config(self, values: dict[str, Any], chorus_home: Path) -> None:
        """Nothing to write: the settings live in config.yaml (``memory.providers.openviking``)."""
        return None

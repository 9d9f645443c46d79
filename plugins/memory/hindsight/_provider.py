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

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from memory.log_content import loggable
from memory.paths import UserKey
from memory.providers import MemoryProvider, provider_dir, strip_memory_context, withdrawn_turn
from plugins.memory._breaker import DEFAULT_COOLDOWN, DEFAULT_THRESHOLD, CircuitBreaker

from . import _config, _deps, _ops, _render, _tools
from ._buffer import Buffer
from ._client import HindsightAPI
from ._guard import BackendFailed, Guard, HindsightPaused

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


def _error(message: str) -> str:
    return json.dumps({"success": False, "error": message}, ensure_ascii=False)


class HindsightProvider(MemoryProvider):
    """Hindsight (``pip install 'chorus[hindsight]'``) on a server at ``base_url``.

    ``clock``, ``failure_threshold`` and ``cooldown`` set the circuit breaker;
    ``environ`` replaces ``os.environ`` as the fallback for missing settings.
    """

    local_state = "the turns it buffers until they are retained (hindsight.db)"

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        failure_threshold: int = DEFAULT_THRESHOLD,
        cooldown: float = DEFAULT_COOLDOWN,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        breaker = CircuitBreaker(threshold=failure_threshold, cooldown=cooldown, clock=clock)
        self._guard = Guard(breaker)
        self._environ = environ
        self._settings = _config.Settings()
        self._home: Path | None = None
        self._api: HindsightAPI | None = None
        self._user_key = ""
        self._platform = ""
        self._session_id = ""
        self._context = "primary"
        self._buffers: dict[str, Buffer] = {}
        self._lock = threading.RLock()

    # -- identity and start-up -----------------------------------------------

    @property
    def name(self) -> str:
        return _config.PROVIDER_NAME

    def is_available(self) -> bool:
        return _deps.installed()

    @property
    def unavailable_reason(self) -> str | None:
        """Why the provider cannot run here (with the fix), or None when it can."""
        return None if self.is_available() else _deps.UNAVAILABLE_REASON

    @property
    def breaker(self) -> CircuitBreaker:
        return self._guard.breaker

    @property
    def settings(self) -> _config.Settings:
        return self._settings

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Read the settings and import the client; no network (a dead server is not fatal)."""
        home = Path(kwargs["chorus_home"])
        user_key = UserKey.parse(str(kwargs["user_key"])).key
        settings = _config.parse(kwargs.get("config"), self._environ)
        api = HindsightAPI(_deps.load(), settings)
        with self._lock:
            self._home, self._api, self._settings = home, api, settings
            self._user_key, self._session_id = user_key, session_id
            self._platform = str(kwargs.get("platform") or "")
            self._context = str(kwargs.get("agent_context") or "primary")
            self._buffers = {}
        logger.debug("hindsight provider ready for session %s (%s)", session_id, self._context)

    # -- plumbing ------------------------------------------------------------

    def _ready(self) -> HindsightAPI:
        with self._lock:
            if self._home is None or self._api is None:
                raise RuntimeError("the hindsight provider is not initialised")
            return self._api

    def _owner(self, speaker: Any = None) -> str:
        """Whose bank a call uses: ``speaker`` when given, else the session's user."""
        self._ready()
        if speaker is None or speaker == "":
            return self._user_key
        if not isinstance(speaker, str):
            raise ValueError("speaker must be a user key")
        return UserKey.parse(speaker).key

    def _buffer(self, user_key: str) -> Buffer:
        self._ready()
        with self._lock:
            assert self._home is not None
            buffer = self._buffers.get(user_key)
            if buffer is None:
                buffer = Buffer(provider_dir(self._home, _config.PROVIDER_NAME, user_key))
                self._buffers[user_key] = buffer
            return buffer

    def _recall(self, owner: str, query: str, timeout: float, max_tokens: int) -> str:
        api, settings = self._ready(), self._settings
        call = partial(
            api.recall,
            settings.bank_id(owner),
            query,
            timeout=timeout,
            max_tokens=max_tokens,
            budget=settings.recall_budget,
        )
        return _render.recall_text(self._guard.run("recall", call))

    # -- recall --------------------------------------------------------------

    def system_prompt_block(self) -> str:
        return _BLOCKS[self._settings.recall_mode]

    def prefetch(self, query: str, *, session_id: str = "", speaker: str | None = None) -> str:
        text = strip_memory_context(query).strip()
        if not text or not self._settings.injects:
            return ""
        owner = self._owner(speaker)
        settings = self._settings
        if not self._guard.paused:
            try:
                recalled = self._recall(
                    owner, text, settings.recall_timeout, settings.recall_max_tokens
                )
                logger.debug("hindsight prefetch for %s: %s", loggable(text), loggable(recalled))
                return recalled
            except (BackendFailed, HindsightPaused):
                pass
        logger.debug("hindsight prefetch: using the warm recall")
        return self._buffer(owner).cached_recall(settings.bank_id(owner), CACHE_MAX_AGE)

    def queue_prefetch(
        self, query: str, *, session_id: str = "", speaker: str | None = None
    ) -> None:
        text = strip_memory_context(query).strip()
        if not text or self._guard.paused or not self._settings.injects:
            return
        owner = self._owner(speaker)
        settings = self._settings
        recalled = self._recall(owner, text, settings.timeout, settings.recall_max_tokens)
        self._buffer(owner).store_recall(settings.bank_id(owner), recalled)

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
        owner = self._owner(speaker)
        bank = self._settings.bank_id(owner)
        session = session_id or self._session_id
        buffer = self._buffer(self._user_key)
        if not buffer.add(session, bank, owner, user, assistant):
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
        _ops.retain_sealed(self._ready(), self._guard, self._settings, buffer, self._platform)

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
        if reset:
            self._session_id = new_session_id or self._session_id
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

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        if not self._settings.has_tools:
            return []
        return [json.loads(json.dumps(schema)) for schema in _tools.SCHEMAS]

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        if not isinstance(args, dict):
            return _error("arguments must be a JSON object")
        if tool_name not in _tools.TOOL_NAMES or not self._settings.has_tools:
            return _error(f"unknown tool '{tool_name}'")
        try:
            result = self._tool(tool_name, args, kwargs.get("speaker"))
        except _tools.ToolError as exc:
            return _error(str(exc))
        except HindsightPaused as exc:
            return _error(str(exc))
        except BackendFailed as exc:
            return _error(f"{tool_name} could not run: the memory backend failed ({exc.cause})")
        except ValueError:
            return _error("speaker must be a user key such as telegram:12345")
        except RuntimeError:
            return _error("hindsight is not ready for this session")
        return json.dumps({"success": True, **result}, ensure_ascii=False)

    def _tool(self, name: str, args: dict[str, Any], speaker: Any) -> dict[str, Any]:
        api, settings = self._ready(), self._settings
        bank = settings.bank_id(self._owner(speaker))
        return _ops.run_tool(api, self._guard, settings, bank, name, args)

    # -- teardown and configuration ------------------------------------------

    def shutdown(self) -> None:
        """Nothing to flush: the buffer is on disk, and every call closes its own client."""
        with self._lock:
            self._api = None

    def get_config_schema(self) -> list[dict[str, Any]]:
        return [dict(field) for field in _config.SCHEMA]

    def save_config(self, values: dict[str, Any], chorus_home: Path) -> None:
        """Nothing to write: the settings live in config.yaml (``memory.providers.hindsight``)."""
        return None

"""The provider kit: what every remote memory provider is built from.

* :mod:`.errors` — one error family, :class:`ProviderError` and its kinds;
* :mod:`.guard` — the circuit breaker around every backend call, with its logs;
* :mod:`.provider` — :class:`RemoteProvider`: identity, the session, the
  ``sync_turn`` preamble and the tool-call wrapper;
* :mod:`.tool_calls` — a tool's JSON answer and the mapping of errors to it;
* :mod:`.identity` — whose store a call uses, and injective backend ids;
* :mod:`.library` — the client library, imported on first use;
* :mod:`.settings` — reading settings from the config section and the environment.

A new provider is its own logic plus this (see "Writing a memory provider" in
docs/OPERATIONS.md).
"""

from __future__ import annotations

from .errors import (
    BackendFailed,
    BadConfig,
    BadToolInput,
    NotFound,
    NotReady,
    Paused,
    ProviderError,
    ProviderUnavailable,
    Refused,
    describe,
    status_of,
)
from .guard import Guard
from .identity import escape_id, hashed_id, owner_key, unescape_id
from .library import ClientLibrary, findable, install_hint
from .local import erase_user_dir, user_files
from .provider import Dependency, RemoteProvider, Session, Turn
from .settings import SettingsReader, environment, http_url, number_in, section_of, setting
from .tool_calls import answer_tool_call, tool_error, tool_success

__all__ = [
    "BackendFailed",
    "BadConfig",
    "BadToolInput",
    "ClientLibrary",
    "Dependency",
    "Guard",
    "NotFound",
    "NotReady",
    "Paused",
    "ProviderError",
    "ProviderUnavailable",
    "Refused",
    "RemoteProvider",
    "Session",
    "SettingsReader",
    "Turn",
    "answer_tool_call",
    "describe",
    "environment",
    "erase_user_dir",
    "escape_id",
    "findable",
    "hashed_id",
    "http_url",
    "install_hint",
    "number_in",
    "owner_key",
    "section_of",
    "setting",
    "status_of",
    "tool_error",
    "tool_success",
    "unescape_id",
    "user_files",
]

"""The provider's settings (``memory.providers.hindsight``) and the bank id of each user.

``initialize`` gets the section as ``config`` with the secret ``api_key``
filled in from ``HINDSIGHT_API_KEY``; a key that is missing or empty falls back
to its environment variable (if it has one) and then to its default, so the
provider also runs with no section at all. A value of the wrong kind falls
back to its default with a WARNING naming the key, never the value. Only
``bank_prefix`` and ``recall_mode`` are strict: a typo in the prefix would
quietly give every user a new, empty bank (and leave their memories behind in
the old one), one in the recall mode would inject (and pay for) recall an
operator turned off.

``recall_mode`` (``hybrid`` by default): ``hybrid`` injects recall before each
turn and offers the tools, ``context`` only injects, ``tools`` only offers the
tools (the model recalls when it asks).

Bank ids: ``<bank_prefix>-<user key>`` with every character of the key other
than ASCII letters, digits and ``-`` written as ``_`` and two hex digits per
UTF-8 byte (``telegram:42`` is ``chorus-telegram_3a42``). ``_`` is always an
escape, so the encoding is injective: two user keys never share a bank.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from plugins.memory._kit import BadConfig, SettingsReader, escape_id, unescape_id

logger = logging.getLogger(__name__)

PROVIDER_NAME = "hindsight"
DEFAULT_BASE_URL = "http://localhost:8888"
DEFAULT_PREFIX = "chorus"
BUDGETS = ("low", "mid", "high")
RECALL_MODES = ("hybrid", "context", "tools")
_PREFIX = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,31}")


@dataclass(frozen=True)
class Settings:
    base_url: str = DEFAULT_BASE_URL
    api_key: str = ""
    bank_prefix: str = DEFAULT_PREFIX
    timeout: float = 30.0
    """Seconds any one call (tools, background retain and recall) may take."""
    recall_timeout: float = 5.0
    """Seconds the live recall before a turn may take (the turn waits less)."""
    recall_budget: str = "mid"
    recall_max_tokens: int = 1024
    reflect_budget: str = "low"
    buffer_turns: int = 20
    """Turns of a session kept on disk before they are retained as a part of its document."""
    retain_async: bool = False
    """Let Hindsight extract a retained session's facts after answering. Off: it answers
    when the facts are stored, so a failed extraction keeps the turns on disk for the
    next try (retaining a part again replaces it)."""
    retain_timeout: float = 120.0
    """Seconds the retain of a session part may take (it includes the extraction)."""
    recall_mode: str = "hybrid"

    @property
    def injects(self) -> bool:
        """Whether recall is injected before each turn (``hybrid``, ``context``)."""
        return self.recall_mode != "tools"

    @property
    def has_tools(self) -> bool:
        """Whether the model gets the hindsight tools (``hybrid``, ``tools``)."""
        return self.recall_mode != "context"

    def bank_id(self, user_key: str) -> str:
        return bank_id(self.bank_prefix, user_key)


def bank_id(prefix: str, user_key: str) -> str:
    """The bank of ``user_key`` (canonical form) under ``prefix``; see the module docstring."""
    return f"{prefix}-{escape_id(user_key)}"


def user_key_of(prefix: str, bank: str) -> str:
    """The inverse of :func:`bank_id`; ValueError for a bank id it did not make."""
    head = f"{prefix}-"
    if not bank.startswith(head):
        raise ValueError("not a bank of this prefix")
    return unescape_id(bank[len(head) :])


_DEFAULTS = Settings()

SCHEMA: list[dict[str, Any]] = [
    {
        "key": "base_url",
        "description": "URL of the Hindsight API server",
        "required": False,
        "default": DEFAULT_BASE_URL,
        "env_var": "HINDSIGHT_BASE_URL",
        "url": "https://hindsight.vectorize.io",
    },
    {
        "key": "api_key",
        "description": "Hindsight API key (sent as a Bearer token; leave empty for a server "
        "without authentication)",
        "secret": True,
        "required": False,
        "env_var": "HINDSIGHT_API_KEY",
    },
    {
        "key": "bank_prefix",
        "description": "Prefix of every bank id (letters, digits, '-'); each user's bank is "
        "<prefix>-<user key>",
        "required": False,
        "default": DEFAULT_PREFIX,
    },
    {
        "key": "timeout",
        "description": "Seconds one call to Hindsight may take (tools, retain, recall in jobs)",
        "required": False,
        "default": _DEFAULTS.timeout,
    },
    {
        "key": "recall_timeout",
        "description": "Seconds the recall before a turn may take; then the cached recall is used",
        "required": False,
        "default": _DEFAULTS.recall_timeout,
    },
    {
        "key": "recall_budget",
        "description": "Recall budget (how hard Hindsight searches)",
        "required": False,
        "default": _DEFAULTS.recall_budget,
        "choices": list(BUDGETS),
    },
    {
        "key": "recall_max_tokens",
        "description": "Most tokens of memories recalled before a turn",
        "required": False,
        "default": _DEFAULTS.recall_max_tokens,
    },
    {
        "key": "reflect_budget",
        "description": "Budget of hindsight_reflect",
        "required": False,
        "default": _DEFAULTS.reflect_budget,
        "choices": list(BUDGETS),
    },
    {
        "key": "buffer_turns",
        "description": "Turns kept on disk before they are retained ahead of the session end",
        "required": False,
        "default": _DEFAULTS.buffer_turns,
    },
    {
        "key": "retain_async",
        "description": (
            "Let Hindsight extract facts after answering (faster, but a failed extraction "
            "loses those turns)"
        ),
        "required": False,
        "default": _DEFAULTS.retain_async,
    },
    {
        "key": "retain_timeout",
        "description": "Seconds the retain of a session may take, fact extraction included",
        "required": False,
        "default": _DEFAULTS.retain_timeout,
    },
    {
        "key": "recall_mode",
        "description": "hybrid: recall injected before each turn and the hindsight tools; "
        "context: only the injected recall; tools: only the tools",
        "required": False,
        "default": _DEFAULTS.recall_mode,
        "choices": list(RECALL_MODES),
    },
]


def parse(config: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from ``config`` and ``environ`` (``os.environ`` by default).

    Raises ValueError for a ``bank_prefix`` that is not letters, digits and ``-``,
    and for a ``recall_mode`` that is not one of :data:`RECALL_MODES`.
    """
    read = SettingsReader(PROVIDER_NAME, config, environ, SCHEMA)
    prefix = read.get("bank_prefix") or DEFAULT_PREFIX
    if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix):
        raise BadConfig(
            "memory.providers.hindsight.bank_prefix must be 1-32 letters, digits or '-'"
        )
    mode = read.get("recall_mode")
    mode = str(mode).strip().lower() if mode is not None else _DEFAULTS.recall_mode
    if mode not in RECALL_MODES:
        raise BadConfig("memory.providers.hindsight.recall_mode must be hybrid, context or tools")
    return Settings(
        base_url=read.url("base_url", DEFAULT_BASE_URL),
        api_key=read.text("api_key"),
        bank_prefix=prefix,
        timeout=read.number("timeout", _DEFAULTS.timeout, 0.1, 600),
        recall_timeout=read.number("recall_timeout", _DEFAULTS.recall_timeout, 0.1, 120),
        recall_budget=read.choice("recall_budget", BUDGETS, _DEFAULTS.recall_budget),
        recall_max_tokens=int(read.number("recall_max_tokens", 1024, 64, 32768)),
        reflect_budget=read.choice("reflect_budget", BUDGETS, _DEFAULTS.reflect_budget),
        buffer_turns=int(read.number("buffer_turns", 20, 1, 500)),
        retain_async=read.flag("retain_async", _DEFAULTS.retain_async),
        retain_timeout=read.number("retain_timeout", _DEFAULTS.retain_timeout, 1, 3600),
        recall_mode=mode,
    )

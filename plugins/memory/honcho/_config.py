"""The provider's settings (``memory.providers.honcho``) and the Honcho names of chorus things.

``initialize`` gets the section as ``config`` with the secret ``api_key`` filled
in from ``HONCHO_API_KEY``; a missing or empty ``api_key`` falls back to that
variable, every other missing key to its default, so the provider also runs
with no section at all. A ``timeout`` of the wrong kind falls back to its
default with a WARNING naming the key, never the value. ``base_url``,
``workspace_id``, ``recall_mode`` and the cost throttles are strict (ValueError,
so the provider is left out of the session and ``chorus memory status`` says
why): a typo in the workspace would quietly start everyone over in another one,
one in the recall mode or a throttle would inject (and pay for) recall an
operator turned off.

Cost throttles: ``injection_frequency`` (``every-turn``, or ``first-turn``: recall
is injected on a session's first turn only), ``context_cadence`` and
``dialectic_cadence`` (the fewest turns between two context calls, and between
two dialectic calls, both 1 by default: every turn) and ``reasoning_level_cap``
(``minimal``, ``low``, ``mid``/``medium``, ``high`` or ``max``; no cap by default):
no dialectic call asks for more reasoning than the cap.

Names: Honcho accepts ``[A-Za-z0-9_-]`` in peer and session ids. A user key or
session id keeps its ASCII letters, digits and ``-``; every other character,
``_`` included, becomes ``_`` and two hex digits per UTF-8 byte
(``telegram:42`` is the peer ``telegram_3a42``). ``_`` is always an escape, so
two keys never share a peer; every user key holds a ``:``, so no user's peer is
ever :data:`ASSISTANT_PEER` (which has no ``_``). A name that would pass
Honcho's 512 characters keeps its first 200 and adds ``_zz`` and a SHA-256,
which no escape produces.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from plugins.memory._kit import BadConfig, SettingsReader, escape_id, hashed_id, unescape_id

logger = logging.getLogger(__name__)

PROVIDER_NAME = "honcho"
DEFAULT_BASE_URL = "https://api.honcho.dev"
DEFAULT_WORKSPACE = "chorus"
DEFAULT_TIMEOUT = 30.0
RECALL_MODES = ("hybrid", "context", "tools")
ASSISTANT_PEER = "chorus-assistant"
"""The peer every chorus session's assistant speaks as."""
MAX_NAME = 512
_WORKSPACE = re.compile(r"[A-Za-z0-9_-]{1,512}")

INJECTION_FREQUENCIES = ("every-turn", "first-turn")
REASONING_LEVELS = ("minimal", "low", "medium", "high", "max")
"""Honcho's dialectic reasoning levels, cheapest first."""
SUPPLEMENT_LEVEL = "low"
"""Reasoning level of the dialectic supplement before a turn (Honcho's own default)."""
MAX_CADENCE = 1000

RecallMode = Literal["hybrid", "context", "tools"]


@dataclass(frozen=True)
class Settings:
    base_url: str = DEFAULT_BASE_URL
    api_key: str = ""
    workspace_id: str = DEFAULT_WORKSPACE
    recall_mode: RecallMode = "hybrid"
    timeout: float = DEFAULT_TIMEOUT
    """Seconds one request to Honcho may take (the live recall before a turn takes less)."""
    injection_frequency: str = "every-turn"
    context_cadence: int = 1
    dialectic_cadence: int = 1
    reasoning_level_cap: str | None = None

    def capped(self, level: str | None) -> str | None:
        """``level`` lowered to ``reasoning_level_cap`` (Honcho's default counts as ``low``)."""
        cap = self.reasoning_level_cap
        if cap is None:
            return level
        wanted = level or SUPPLEMENT_LEVEL
        return min(wanted, cap, key=REASONING_LEVELS.index)

    @property
    def injects(self) -> bool:
        """Whether recall is injected before each turn (``hybrid``, ``context``)."""
        return self.recall_mode != "tools"

    @property
    def has_tools(self) -> bool:
        """Whether the model gets the honcho tools (``hybrid``, ``tools``)."""
        return self.recall_mode != "context"


def honcho_name(raw: str) -> str:
    """``raw`` (a user key or session id) as a Honcho id; see the module docstring."""
    encoded = escape_id(raw)
    if len(encoded) <= MAX_NAME:
        return encoded
    return f"{encoded[:200]}_zz{hashed_id(raw)}"


def original_name(name: str) -> str:
    """The inverse of :func:`honcho_name` for names it did not hash; ValueError otherwise."""
    return unescape_id(name)


_DEFAULTS = Settings()

SCHEMA: list[dict[str, Any]] = [
    {
        "key": "base_url",
        "description": "URL of the Honcho API (the hosted one, or your own server)",
        "required": False,
        "default": DEFAULT_BASE_URL,
        "url": "https://honcho.dev",
    },
    {
        "key": "api_key",
        "description": "Honcho API key (sent as a Bearer token; may be left empty for a "
        "self-hosted server without authentication)",
        "secret": True,
        "required": False,
        "env_var": "HONCHO_API_KEY",
        "url": "https://app.honcho.dev",
    },
    {
        "key": "workspace_id",
        "description": "Honcho workspace that holds chorus's peers and sessions "
        "(letters, digits, '_' and '-')",
        "required": False,
        "default": DEFAULT_WORKSPACE,
    },
    {
        "key": "recall_mode",
        "description": "hybrid: recall injected before each turn and the honcho tools; "
        "context: only the injected recall; tools: only the tools",
        "required": False,
        "default": _DEFAULTS.recall_mode,
        "choices": list(RECALL_MODES),
    },
    {
        "key": "timeout",
        "description": "Seconds one request to Honcho may take",
        "required": False,
        "default": DEFAULT_TIMEOUT,
    },
    {
        "key": "injection_frequency",
        "description": "every-turn: recall injected before each turn; first-turn: only "
        "before a session's first turn",
        "required": False,
        "default": _DEFAULTS.injection_frequency,
        "choices": list(INJECTION_FREQUENCIES),
    },
    {
        "key": "context_cadence",
        "description": "Fewest turns between two calls for the person's context (1: every turn)",
        "required": False,
        "default": _DEFAULTS.context_cadence,
    },
    {
        "key": "dialectic_cadence",
        "description": "Fewest turns between two dialectic questions about the person "
        "(1: every turn)",
        "required": False,
        "default": _DEFAULTS.dialectic_cadence,
    },
    {
        "key": "reasoning_level_cap",
        "description": "Highest reasoning level a dialectic question may use "
        "(minimal, low, mid, high, max; empty: no cap)",
        "required": False,
        "default": None,
    },
]


def _timeout(value: Any) -> float:
    if value is None:
        return DEFAULT_TIMEOUT
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if isinstance(value, bool) or not 1.0 <= number <= 600.0:
        logger.warning(
            "memory.providers.honcho.timeout must be a number of seconds from 1 to 600; using %g",
            DEFAULT_TIMEOUT,
        )
        return DEFAULT_TIMEOUT
    return number


def _recall_mode(value: Any) -> RecallMode:
    text = str(value).strip().lower() if value is not None else "hybrid"
    for mode in RECALL_MODES:
        if text == mode:
            return mode  # type: ignore[return-value]  # one of the literal's values
    raise BadConfig("memory.providers.honcho.recall_mode must be hybrid, context or tools")


def _choice(value: Any, key: str, choices: tuple[str, ...], default: str) -> str:
    text = str(value).strip().lower() if value is not None else default
    if text not in choices:
        raise BadConfig(f"memory.providers.honcho.{key} must be " + " or ".join(choices))
    return text


def _cadence(value: Any, key: str) -> int:
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int | str):
        number = 0
    else:
        try:
            number = int(value)
        except ValueError:
            number = 0
    if not 1 <= number <= MAX_CADENCE:
        raise BadConfig(
            f"memory.providers.honcho.{key} must be a whole number of turns from 1 to {MAX_CADENCE}"
        )
    return number


def _level_cap(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip().lower()
    text = "medium" if text == "mid" else text
    if text not in REASONING_LEVELS:
        raise BadConfig(
            "memory.providers.honcho.reasoning_level_cap must be minimal, low, mid, high or max"
        )
    return text


def parse(config: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from ``config`` and ``environ`` (``os.environ`` by default).

    Raises ValueError for a bad ``workspace_id``, ``recall_mode``, ``base_url`` or throttle.
    """
    get = SettingsReader(PROVIDER_NAME, config, environ, SCHEMA).get

    base_url = get("base_url") or DEFAULT_BASE_URL
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise BadConfig("memory.providers.honcho.base_url must be an http(s) URL")
    workspace = get("workspace_id") or DEFAULT_WORKSPACE
    if not isinstance(workspace, str) or not _WORKSPACE.fullmatch(workspace):
        raise BadConfig(
            "memory.providers.honcho.workspace_id must be 1-512 letters, digits, '_' or '-'"
        )
    api_key = get("api_key")
    return Settings(
        base_url=base_url.rstrip("/"),
        api_key=api_key if isinstance(api_key, str) else "",
        workspace_id=workspace,
        recall_mode=_recall_mode(get("recall_mode")),
        timeout=_timeout(get("timeout")),
        injection_frequency=_choice(
            get("injection_frequency"), "injection_frequency", INJECTION_FREQUENCIES, "every-turn"
        ),
        context_cadence=_cadence(get("context_cadence"), "context_cadence"),
        dialectic_cadence=_cadence(get("dialectic_cadence"), "dialectic_cadence"),
        reasoning_level_cap=_level_cap(get("reasoning_level_cap")),
    )

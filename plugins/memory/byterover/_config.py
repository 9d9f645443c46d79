"""The provider's settings: ``memory.providers.byterover`` in config.yaml, then the environment.

Three settings: ``binary``, the ``brv`` executable (a name looked up on ``PATH``,
or a path; ``BRV_BINARY`` in the environment when config.yaml has none),
``timeout``, the seconds one ``brv`` run may take before it is killed, and
``prefetch_timeout``, the seconds a turn's recall query may take before the
warm recall is used instead (a first query of a person starts brv's agent,
which takes seconds on a slow host). A bad value falls back to its default
with a WARNING naming the key.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from plugins.memory._kit import SettingsReader

logger = logging.getLogger(__name__)

PROVIDER_NAME = "byterover"
DEFAULT_BINARY = "brv"
BINARY_ENV = "BRV_BINARY"
DEFAULT_TIMEOUT = 30.0
DEFAULT_PREFETCH_TIMEOUT = 5.0
MAX_TIMEOUT = 600.0
INSTALL_HINT = "install with npm i -g byterover-cli"


@dataclass(frozen=True)
class Settings:
    binary: str = DEFAULT_BINARY
    timeout: float = DEFAULT_TIMEOUT
    prefetch_timeout: float = DEFAULT_PREFETCH_TIMEOUT


SCHEMA: list[dict[str, Any]] = [
    {
        "key": "binary",
        "description": "The brv executable (npm i -g byterover-cli): a name on PATH or a path",
        "secret": False,
        "required": False,
        "default": DEFAULT_BINARY,
        "env_var": BINARY_ENV,
    },
    {
        "key": "timeout",
        "description": "Seconds one brv run may take before it is killed",
        "secret": False,
        "required": False,
        "default": DEFAULT_TIMEOUT,
    },
    {
        "key": "prefetch_timeout",
        "description": "Seconds a recall query may take before the warm recall is used",
        "secret": False,
        "required": False,
        "default": DEFAULT_PREFETCH_TIMEOUT,
    },
]


def default_binary(environ: Mapping[str, str] | None = None) -> str:
    env: Mapping[str, str] = os.environ if environ is None else environ
    return env.get(BINARY_ENV, "").strip() or DEFAULT_BINARY


def parse(config: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from the ``config`` section and ``environ`` (``os.environ`` by default)."""
    section: Mapping[str, Any] = config if isinstance(config, Mapping) else {}
    binary = section.get("binary")
    if not isinstance(binary, str) or not binary.strip():
        if binary not in (None, ""):
            logger.warning("memory.providers.byterover.binary must be a string; using brv")
        binary = default_binary(environ)
    reader = SettingsReader(PROVIDER_NAME, section, environ)
    timeout = reader.number("timeout", DEFAULT_TIMEOUT, 0, MAX_TIMEOUT, above_low=True)
    prefetch_timeout = reader.number(
        "prefetch_timeout", DEFAULT_PREFETCH_TIMEOUT, 0, MAX_TIMEOUT, above_low=True
    )
    return Settings(binary=binary.strip(), timeout=timeout, prefetch_timeout=prefetch_timeout)

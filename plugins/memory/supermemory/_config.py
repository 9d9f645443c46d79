"""The provider's settings: ``memory.providers.supermemory`` in config.yaml, then the environment.

``initialize`` gets the section as ``config`` with the secret already filled in
from the environment (``SUPERMEMORY_API_KEY``, in the process environment or
``CHORUS_HOME/.env``); a missing key falls back to its environment variable and
then to its default. A bad value (a ``timeout`` of 0, a ``base_url`` that is not
an URL) falls back to the default with a WARNING naming the key, never the value.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from plugins.memory._kit import SettingsReader

logger = logging.getLogger(__name__)

PROVIDER_NAME = "supermemory"
DEFAULT_BASE_URL = "https://api.supermemory.ai"
DEFAULT_TIMEOUT = 10.0
MAX_TIMEOUT = 300.0
API_KEY_ENV = "SUPERMEMORY_API_KEY"
SEARCH_LIMIT = 5


@dataclass(frozen=True)
class Settings:
    base_url: str = DEFAULT_BASE_URL
    api_key: str = ""
    timeout: float = DEFAULT_TIMEOUT


SCHEMA: list[dict[str, Any]] = [
    {
        "key": "base_url",
        "description": "Supermemory API URL",
        "secret": False,
        "required": False,
        "default": DEFAULT_BASE_URL,
    },
    {
        "key": "api_key",
        "description": "Supermemory API key",
        "secret": True,
        "required": True,
        "env_var": API_KEY_ENV,
        "url": "https://console.supermemory.ai",
    },
    {
        "key": "timeout",
        "description": "Seconds one request to Supermemory may take",
        "secret": False,
        "required": False,
        "default": DEFAULT_TIMEOUT,
    },
]


def parse(config: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from the ``config`` section and ``environ`` (``os.environ`` by default)."""
    read = SettingsReader(PROVIDER_NAME, config, environ, SCHEMA)
    return Settings(
        base_url=read.url("base_url", DEFAULT_BASE_URL),
        api_key=str(read.get("api_key") or ""),
        timeout=read.number("timeout", DEFAULT_TIMEOUT, 0, MAX_TIMEOUT, above_low=True),
    )

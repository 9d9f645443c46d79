"""The provider's settings: ``memory.providers.retaindb`` in config.yaml, then the environment.

Three keys: ``base_url`` (the RetainDB server), ``api_key`` (a secret, sent as a
bearer token: only from ``RETAINDB_API_KEY`` in the environment or
``CHORUS_HOME/.env``, never config.yaml) and ``timeout`` (the bound of every
HTTP call, in seconds). A bad value falls back to its default with a WARNING
naming the key, never the value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from plugins.memory._remote import http_url, number_in, setting

PROVIDER_NAME = "retaindb"
DEFAULT_BASE_URL = "http://127.0.0.1:8787"
DEFAULT_TIMEOUT = 10.0
MAX_TIMEOUT = 120.0
SEARCH_LIMIT = 5
ENV_API_KEY = "RETAINDB_API_KEY"
ENV_BASE_URL = "RETAINDB_BASE_URL"


@dataclass(frozen=True)
class Settings:
    base_url: str = DEFAULT_BASE_URL
    api_key: str = ""
    timeout: float = DEFAULT_TIMEOUT


SCHEMA: list[dict[str, Any]] = [
    {
        "key": "base_url",
        "description": "URL of the RetainDB server",
        "secret": False,
        "required": False,
        "default": DEFAULT_BASE_URL,
        "env_var": ENV_BASE_URL,
    },
    {
        "key": "api_key",
        "description": "RetainDB API key (sent as a bearer token)",
        "secret": True,
        "required": True,
        "env_var": ENV_API_KEY,
    },
    {
        "key": "timeout",
        "description": f"Seconds each call to the server may take (0.1-{MAX_TIMEOUT:.0f})",
        "secret": False,
        "required": False,
        "default": DEFAULT_TIMEOUT,
    },
]


def parse(config: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from the ``config`` section and ``environ`` (``os.environ`` by default)."""
    section: Mapping[str, Any] = config if isinstance(config, Mapping) else {}
    env: Mapping[str, str] = os.environ if environ is None else environ
    where = "memory.providers.retaindb"
    url = http_url(
        setting(section, env, "base_url", ENV_BASE_URL), DEFAULT_BASE_URL, f"{where}.base_url"
    )
    raw = setting(section, env, "timeout", "")
    timeout = number_in(raw, DEFAULT_TIMEOUT, 0.1, MAX_TIMEOUT, f"{where}.timeout")
    key = setting(section, env, "api_key", ENV_API_KEY)
    return Settings(url, key if isinstance(key, str) else "", timeout)

"""The provider's settings: ``memory.providers.openviking`` in config.yaml, then the environment.

Three keys: ``base_url`` (the OpenViking server, ``openviking-server`` listens on
port 1933 by default), ``api_key`` (a secret: only from ``OPENVIKING_API_KEY`` in
the environment or ``CHORUS_HOME/.env``, never config.yaml) and ``timeout`` (the
bound of every HTTP call, in seconds). A bad value falls back to its default
with a WARNING naming the key, never the value, so a typo costs recall quality,
not the session.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from plugins.memory._kit import http_url, number_in, setting

PROVIDER_NAME = "openviking"
DEFAULT_BASE_URL = "http://127.0.0.1:1933"
DEFAULT_TIMEOUT = 10.0
MAX_TIMEOUT = 120.0
SEARCH_LIMIT = 5
ENV_API_KEY = "OPENVIKING_API_KEY"
ENV_BASE_URL = "OPENVIKING_BASE_URL"


@dataclass(frozen=True)
class Settings:
    base_url: str = DEFAULT_BASE_URL
    api_key: str = ""
    timeout: float = DEFAULT_TIMEOUT


SCHEMA: list[dict[str, Any]] = [
    {
        "key": "base_url",
        "description": "URL of the OpenViking server (openviking-server)",
        "secret": False,
        "required": False,
        "default": DEFAULT_BASE_URL,
        "env_var": ENV_BASE_URL,
    },
    {
        "key": "api_key",
        "description": "The server's root_api_key (trusted auth mode; sent as X-API-Key)",
        "secret": True,
        "required": False,
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
    where = "memory.providers.openviking"
    url = http_url(
        setting(section, env, "base_url", ENV_BASE_URL), DEFAULT_BASE_URL, f"{where}.base_url"
    )
    raw = setting(section, env, "timeout", "")
    timeout = number_in(raw, DEFAULT_TIMEOUT, 0.1, MAX_TIMEOUT, f"{where}.timeout")
    key = setting(section, env, "api_key", ENV_API_KEY)
    return Settings(url, key if isinstance(key, str) else "", timeout)

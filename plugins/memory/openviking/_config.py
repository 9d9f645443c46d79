"""The provider's settings: ``memory.providers.openviking`` in config.yaml, then the environment.

Three keys: ``base_url`` (the OpenViking server, ``openviking-server`` listens on
port 1933 by default), ``api_key`` (a secret: only from ``OPENVIKING_API_KEY`` in
the environment or ``CHORUS_HOME/.env``, never config.yaml) and ``timeout`` (the
bound of every HTTP call, in seconds). A bad value falls back to its default
with a WARNING naming the key, never the value, so a typo costs recall quality,
not the session.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

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


def _value(section: Mapping[str, Any], env: Mapping[str, str], key: str, var: str) -> Any:
    value = section.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        value = env.get(var) if var else None
    return value.strip() if isinstance(value, str) else value


def parse(config: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from the ``config`` section and ``environ`` (``os.environ`` by default)."""
    section: Mapping[str, Any] = config if isinstance(config, Mapping) else {}
    env: Mapping[str, str] = os.environ if environ is None else environ
    url = _value(section, env, "base_url", ENV_BASE_URL) or DEFAULT_BASE_URL
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        logger.warning("memory.providers.openviking.base_url must be an http(s) URL; default")
        url = DEFAULT_BASE_URL
    timeout = DEFAULT_TIMEOUT
    raw = _value(section, env, "timeout", "")
    if raw is not None:
        try:
            timeout = float(raw)
            if isinstance(raw, bool) or not 0.1 <= timeout <= MAX_TIMEOUT:
                raise ValueError
        except (TypeError, ValueError):
            logger.warning("memory.providers.openviking.timeout is out of range; default")
            timeout = DEFAULT_TIMEOUT
    key = _value(section, env, "api_key", ENV_API_KEY)
    return Settings(url.rstrip("/"), key if isinstance(key, str) else "", timeout)

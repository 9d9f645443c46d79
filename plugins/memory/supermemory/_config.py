"""The provider's settings: ``memory.providers.supermemory`` in config.yaml, then the environment.

``initialize`` gets the section as ``config`` with the secret already filled in
from the environment (``SUPERMEMORY_API_KEY``, in the process environment or
``CHORUS_HOME/.env``); a missing key falls back to its environment variable and
then to its default. A bad value (a ``timeout`` of 0, a ``base_url`` that is not
an URL) falls back to the default with a WARNING naming the key, never the value.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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


def _value(config: Mapping[str, Any], environ: Mapping[str, str], key: str) -> Any:
    value = config.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        value = environ.get(API_KEY_ENV) if key == "api_key" else None
    if isinstance(value, str):
        return value.strip() or None
    return value


def _timeout(value: Any) -> float:
    if value is None:
        return DEFAULT_TIMEOUT
    try:
        number = float(value) if not isinstance(value, bool) else 0.0
    except (TypeError, ValueError):
        number = 0.0
    if not 0 < number <= MAX_TIMEOUT:
        logger.warning(
            "memory.providers.supermemory.timeout must be a number of seconds (0-%d]; using %s",
            MAX_TIMEOUT,
            DEFAULT_TIMEOUT,
        )
        return DEFAULT_TIMEOUT
    return number


def _base_url(value: Any) -> str:
    if value is None:
        return DEFAULT_BASE_URL
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        logger.warning(
            "memory.providers.supermemory.base_url must be an http(s) URL; using %s",
            DEFAULT_BASE_URL,
        )
        return DEFAULT_BASE_URL
    return value.rstrip("/")


def parse(config: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from the ``config`` section and ``environ`` (``os.environ`` by default)."""
    section: Mapping[str, Any] = config if isinstance(config, Mapping) else {}
    env: Mapping[str, str] = os.environ if environ is None else environ
    api_key = _value(section, env, "api_key")
    return Settings(
        base_url=_base_url(_value(section, env, "base_url")),
        api_key=str(api_key) if api_key is not None else "",
        timeout=_timeout(_value(section, env, "timeout")),
    )

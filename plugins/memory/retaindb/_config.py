"""The provider's settings: ``memory.providers.retaindb`` in config.yaml, then the environment.

Four keys: ``base_url`` (the RetainDB API, ``https://api.retaindb.com`` by
default), ``api_key`` (a secret, sent as a bearer token: only from
``RETAINDB_API_KEY`` in the environment or ``CHORUS_HOME/.env``, never
config.yaml), ``project`` (the RetainDB project every memory is kept in,
``default`` unless set; ``RETAINDB_PROJECT`` in the environment) and
``timeout`` (the bound of every HTTP call, in seconds). A bad value falls back
to its default with a WARNING naming the key, never the value.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from plugins.memory._kit import http_url, number_in, setting

logger = logging.getLogger(__name__)

PROVIDER_NAME = "retaindb"
DEFAULT_BASE_URL = "https://api.retaindb.com"
DEFAULT_PROJECT = "default"
DEFAULT_TIMEOUT = 10.0
MAX_TIMEOUT = 120.0
SEARCH_LIMIT = 5
ENV_API_KEY = "RETAINDB_API_KEY"
ENV_BASE_URL = "RETAINDB_BASE_URL"
ENV_PROJECT = "RETAINDB_PROJECT"
_PROJECT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


@dataclass(frozen=True)
class Settings:
    base_url: str = DEFAULT_BASE_URL
    api_key: str = ""
    timeout: float = DEFAULT_TIMEOUT
    project: str = DEFAULT_PROJECT


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
        "key": "project",
        "description": "RetainDB project the memories are kept in",
        "secret": False,
        "required": False,
        "default": DEFAULT_PROJECT,
        "env_var": ENV_PROJECT,
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
    project = setting(section, env, "project", ENV_PROJECT)
    if project is None or project == "":
        project = DEFAULT_PROJECT
    elif not isinstance(project, str) or not _PROJECT.match(project):
        logger.warning(
            "%s.project must be letters, digits, '.', '_', ':' or '-' (at most 128); default",
            where,
        )
        project = DEFAULT_PROJECT
    return Settings(url, key if isinstance(key, str) else "", timeout, project)

"""The provider's settings: ``memory.providers.mem0`` in config.yaml, then the environment.

``initialize`` gets the section as ``config`` with its secrets already filled
in from the environment; a key that is missing or empty falls back to the
environment variable named in :data:`SCHEMA` and then to the default, so the
provider also runs with no section at all. Unknown keys are ignored.

A value of the wrong kind (a ``search_limit`` of 0, a ``host`` that is not an
URL) falls back to its default with a WARNING naming the key, never the value;
only ``mode`` is strict, since a misspelt ``platform`` would otherwise send the
user's words to another service than the one meant.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from plugins.memory._kit import BadConfig, SettingsReader

logger = logging.getLogger(__name__)

PROVIDER_NAME = "mem0"
MODES = ("oss", "platform")
DEFAULT_HOST = "https://api.mem0.ai"
DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
DEFAULT_LLM_MODEL = "gpt-5-mini"
DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"
DEFAULT_EMBEDDING_DIMS = 1536
"""What mem0 assumes when ``embedding_dims`` is unset (``text-embedding-3-small``)."""
DEFAULT_SEARCH_LIMIT = 5
MAX_SEARCH_LIMIT = 20
MAX_EMBEDDING_DIMS = 16384

Mode = Literal["oss", "platform"]


@dataclass(frozen=True)
class Settings:
    mode: Mode = "oss"
    api_key: str = ""
    host: str = DEFAULT_HOST
    llm_model: str = DEFAULT_LLM_MODEL
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    embedding_dims: int | None = None
    """Sent to the embeddings API as ``dimensions`` when set; None: the model's own size."""
    openai_base_url: str = DEFAULT_OPENAI_BASE_URL
    openai_api_key: str = ""
    search_limit: int = DEFAULT_SEARCH_LIMIT

    @property
    def backend_id(self) -> str:
        """Which memory store the settings mean: ``oss``, or ``platform`` and its host."""
        return "oss" if self.mode == "oss" else f"platform {self.host}"

    @property
    def vector_size(self) -> int:
        """The size of the stored vectors (``embedding_dims`` or mem0's default)."""
        return self.embedding_dims or DEFAULT_EMBEDDING_DIMS


SCHEMA: list[dict[str, Any]] = [
    {
        "key": "mode",
        "description": "oss: mem0 runs in this process, with Qdrant on local disk and an "
        "OpenAI-compatible server for extraction and embeddings; platform: the hosted Mem0 API",
        "secret": False,
        "required": False,
        "default": "oss",
        "choices": list(MODES),
    },
    {
        "key": "api_key",
        "description": "Mem0 platform API key (platform mode only)",
        "secret": True,
        "required": False,
        "env_var": "MEM0_API_KEY",
        "url": "https://app.mem0.ai/dashboard/api-keys",
    },
    {
        "key": "host",
        "description": "Mem0 platform URL (platform mode only)",
        "secret": False,
        "required": False,
        "default": DEFAULT_HOST,
    },
    {
        "key": "llm_model",
        "description": "Chat model mem0 extracts memories with (oss mode)",
        "secret": False,
        "required": False,
        "default": DEFAULT_LLM_MODEL,
    },
    {
        "key": "embedding_model",
        "description": "Embedding model (oss mode)",
        "secret": False,
        "required": False,
        "default": DEFAULT_EMBEDDING_MODEL,
    },
    {
        "key": "embedding_dims",
        "description": "Embedding size, sent as 'dimensions' when set; unset means the "
        f"model's own size, taken to be {DEFAULT_EMBEDDING_DIMS} (oss mode)",
        "secret": False,
        "required": False,
        "default": None,
    },
    {
        "key": "openai_base_url",
        "description": "Base URL of the OpenAI-compatible server for the chat and embedding "
        "models (oss mode)",
        "secret": False,
        "required": False,
        "default": DEFAULT_OPENAI_BASE_URL,
        "env_var": "OPENAI_BASE_URL",
    },
    {
        "key": "openai_api_key",
        "description": "API key of that server (oss mode; may be left empty for a local server)",
        "secret": True,
        "required": False,
        "env_var": "OPENAI_API_KEY",
    },
    {
        "key": "search_limit",
        "description": f"How many memories to recall before each turn (1-{MAX_SEARCH_LIMIT})",
        "secret": False,
        "required": False,
        "default": DEFAULT_SEARCH_LIMIT,
    },
]


def _integer(value: Any, low: int, high: int) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if low <= number <= high else None


def _mode(value: Any) -> Mode:
    text = str(value).strip().lower() if value is not None else "oss"
    if text == "oss":
        return "oss"
    if text == "platform":
        return "platform"
    raise BadConfig("memory.providers.mem0.mode must be 'oss' or 'platform'")


def parse(config: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from the ``config`` section and ``environ`` (``os.environ`` by default).

    Raises ValueError for an unknown ``mode``; every other bad value means its default.
    """
    read = SettingsReader(PROVIDER_NAME, config, environ, SCHEMA)
    limit_raw = read.get("search_limit")
    limit = DEFAULT_SEARCH_LIMIT
    if limit_raw is not None:
        parsed = _integer(limit_raw, 1, MAX_SEARCH_LIMIT)
        if parsed is None:
            logger.warning(
                "memory.providers.mem0.search_limit must be an integer 1-%d; using %d",
                MAX_SEARCH_LIMIT,
                limit,
            )
        else:
            limit = parsed
    dims_raw = read.get("embedding_dims")
    dims = None if dims_raw is None else _integer(dims_raw, 1, MAX_EMBEDDING_DIMS)
    if dims_raw is not None and dims is None:
        logger.warning("memory.providers.mem0.embedding_dims must be a positive integer; unset")
    return Settings(
        mode=_mode(read.get("mode")),
        api_key=read.text("api_key"),
        host=read.url("host", DEFAULT_HOST),
        llm_model=read.text("llm_model", DEFAULT_LLM_MODEL),
        embedding_model=read.text("embedding_model", DEFAULT_EMBEDDING_MODEL),
        embedding_dims=dims,
        openai_base_url=read.url("openai_base_url", DEFAULT_OPENAI_BASE_URL),
        openai_api_key=read.text("openai_api_key"),
        search_limit=limit,
    )

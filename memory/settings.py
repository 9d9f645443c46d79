"""Settings the memory layer needs, declared here and composed by ``gateway.config``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

DEFAULT_MEMORY_CHAR_LIMIT = 2200
"""Characters allowed in the shared MEMORY.md (about 800 tokens)."""

DEFAULT_USER_CHAR_LIMIT = 1375
"""Characters allowed in one user's USER.md (about 500 tokens)."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MemorySettings(_Section):
    """The ``memory`` section: curated files, nudges and the external provider."""

    memory_char_limit: int = Field(DEFAULT_MEMORY_CHAR_LIMIT, gt=0)
    user_char_limit: int = Field(DEFAULT_USER_CHAR_LIMIT, gt=0)
    nudge_interval: int = Field(
        10, ge=0, description="Turns without a memory write before a reminder; 0 disables."
    )
    flush_min_turns: int = Field(
        6, ge=0, description="Turns a session needs before its end flushes memories."
    )
    shared_writes: Literal["admins", "review", "open"] = Field(
        "review",
        description="Who may write the shared MEMORY.md: admins only, others staged "
        "for review, or everyone.",
    )
    provider: str | None = Field(
        None, description="Name of the one external memory provider, if any."
    )
    providers: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Each provider's own settings by name (memory.providers.<name>); "
        "its secrets come from environment variables or CHORUS_HOME/.env.",
    )
    prefetch_timeout: float = Field(
        0.5,
        ge=0,
        description="Seconds a turn waits for the provider's recall of its message; "
        "a later answer is used on the next turn.",
    )


class DatabaseSettings(_Section):
    """The ``database`` section: without ``url`` everything is in ``CHORUS_HOME/state.db``."""

    url: SecretStr | None = Field(
        None,
        description="postgresql://… URL of the store several replicas share (transcripts, "
        "sessions, the gateway's tables, the memory files); may carry a password.",
    )
    pool_size: int = Field(
        10, gt=0, description="Connections one process keeps open to PostgreSQL at most."
    )


class RedisSettings(_Section):
    """The ``redis`` section: without ``url`` background jobs run in-process."""

    url: SecretStr | None = Field(
        None, description="redis://… URL; may carry a password, so it is secret."
    )
    queue_name: str = "chorus"
    job_retries: int = Field(
        3, ge=0, description="Retries of a failed job before it is kept as failed."
    )
    retry_intervals: list[int] = Field(
        default_factory=lambda: [10, 60, 300],
        description="Seconds to wait before each retry (the last one repeats).",
    )
    job_timeout: int = Field(600, gt=0, description="Seconds one job may run.")

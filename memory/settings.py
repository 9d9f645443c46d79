"""Settings the memory layer needs, declared here and composed by ``gateway.config``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

DEFAULT_MEMORY_CHAR_LIMIT = 2200
"""Characters allowed in the shared MEMORY.md (about 800 tokens)."""

DEFAULT_USER_CHAR_LIMIT = 1375
"""Characters allowed in one user's USER.md (about 500 tokens)."""


@dataclass(frozen=True)
class TakesEffect:
    """When a changed setting takes effect in a running process.

    Every settings field carries one, as ``Annotated[type, LIVE]``: ``live`` — at
    once, on a reload; ``new sessions`` — in sessions started after the reload;
    ``restart`` — a reload names the key and keeps its value until a restart.
    """

    when: Literal["live", "new sessions", "restart"]


LIVE = TakesEffect("live")
NEW_SESSIONS = TakesEffect("new sessions")
RESTART = TakesEffect("restart")


def declared_effects(
    model: type[BaseModel], prefix: tuple[str, ...] = ()
) -> dict[tuple[str, ...], TakesEffect]:
    """Every setting under ``model`` by its path (nested sections walked) and its effect.

    Raises ``TypeError`` for a field that declares none, so none is forgotten.
    """
    found: dict[tuple[str, ...], TakesEffect] = {}
    for name, field in model.model_fields.items():
        path = (*prefix, name)
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            found.update(declared_effects(annotation, path))
            continue
        marks = [m for m in field.metadata if isinstance(m, TakesEffect)]
        if len(marks) != 1:
            raise TypeError(f"setting {'.'.join(path)} declares no effect (LIVE, NEW_SESSIONS, …)")
        found[path] = marks[0]
    return found


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MemorySettings(_Section):
    """The ``memory`` section: curated files, nudges and the external provider."""

    @property
    def targets(self) -> tuple[str, ...]:
        """The memory tool's targets these switches leave on (``memory``, ``user``)."""
        on = (("memory", self.memory_enabled), ("user", self.user_profile_enabled))
        return tuple(target for target, enabled in on if enabled)

    memory_enabled: Annotated[bool, NEW_SESSIONS] = Field(
        True,
        description="The shared MEMORY.md: in the prompt, a target of the memory tool and "
        "of the flush.",
    )
    user_profile_enabled: Annotated[bool, NEW_SESSIONS] = Field(
        True,
        description="Each person's USER.md: in the prompt, a target of the memory tool and "
        "of the flush.",
    )
    memory_char_limit: Annotated[int, NEW_SESSIONS] = Field(DEFAULT_MEMORY_CHAR_LIMIT, gt=0)
    user_char_limit: Annotated[int, NEW_SESSIONS] = Field(DEFAULT_USER_CHAR_LIMIT, gt=0)
    nudge_interval: Annotated[int, NEW_SESSIONS] = Field(
        10, ge=0, description="Turns without a memory write before a reminder; 0 disables."
    )
    flush_min_turns: Annotated[int, LIVE] = Field(
        6, ge=0, description="Turns a session needs before its end flushes memories."
    )
    shared_writes: Annotated[Literal["admins", "review", "open"], LIVE] = Field(
        "review",
        description="Who may write the shared MEMORY.md and groups' shared profiles: admins "
        "only, others staged for review, or everyone.",
    )
    provider: Annotated[str | None, RESTART] = Field(
        None, description="Name of the one external memory provider, if any."
    )
    providers: Annotated[dict[str, dict[str, Any]], NEW_SESSIONS] = Field(
        default_factory=dict,
        description="Each provider's own settings by name (memory.providers.<name>); "
        "its secrets come from environment variables or CHORUS_HOME/.env.",
    )
    prefetch_timeout: Annotated[float, NEW_SESSIONS] = Field(
        0.5,
        ge=0,
        description="Seconds a turn waits for the provider's recall of its message; "
        "a later answer is used on the next turn.",
    )
    local_state: Annotated[Literal["ephemeral", "persistent"], RESTART] = Field(
        "ephemeral",
        description="persistent: CHORUS_HOME is one volume that outlives a restart, shared by "
        "every gateway and worker (a session's jobs may run on any worker). With "
        "database.url, a provider that keeps its state in CHORUS_HOME (holographic's "
        "facts, a remote provider's buffer) runs only then.",
    )


class DatabaseSettings(_Section):
    """The ``database`` section: without ``url`` everything is in ``CHORUS_HOME/state.db``."""

    url: Annotated[SecretStr | None, RESTART] = Field(
        None,
        description="postgresql://… URL of the store several replicas share (transcripts, "
        "sessions, the gateway's tables, the memory files); may carry a password.",
    )
    pool_size: Annotated[int, RESTART] = Field(
        10, gt=0, description="Connections one process keeps open to PostgreSQL at most."
    )


class RedisSettings(_Section):
    """The ``redis`` section: without ``url`` background jobs run in-process."""

    url: Annotated[SecretStr | None, RESTART] = Field(
        None, description="redis://… URL; may carry a password, so it is secret."
    )
    queue_name: Annotated[str, RESTART] = "chorus"
    job_retries: Annotated[int, RESTART] = Field(
        3, ge=0, description="Retries of a failed job before it is kept as failed."
    )
    retry_intervals: Annotated[list[int], RESTART] = Field(
        default_factory=lambda: [10, 60, 300],
        description="Seconds to wait before each retry (the last one repeats).",
    )
    job_timeout: Annotated[int, RESTART] = Field(600, gt=0, description="Seconds one job may run.")

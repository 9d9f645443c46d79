"""The ``discord`` section of the configuration."""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from memory.settings import RESTART


class DiscordSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    token: Annotated[SecretStr | None, RESTART] = Field(None, description="DISCORD_BOT_TOKEN.")
    api_url: Annotated[str | None, RESTART] = Field(
        None, description="REST API base URL (…/api/v10); unset: Discord's own."
    )
    command_guilds: Annotated[list[int], RESTART] = Field(
        default_factory=list,
        description=(
            "Guild ids to register the slash commands in (instant, for testing); "
            "empty: register them globally."
        ),
    )
    follow_threads: Annotated[bool, RESTART] = Field(
        True,
        description=(
            "After the bot answers in a thread, later messages there reach it without a mention."
        ),
    )
    shards: Annotated[int | None, RESTART] = Field(
        None, ge=1, description="Shard count: run an AutoShardedClient with this many shards."
    )
    shard_ids: Annotated[list[int], RESTART] = Field(
        default_factory=list,
        description="The shards this process runs (with shards); empty: all of them.",
    )

    @model_validator(mode="after")
    def _shards_fit(self) -> Self:
        if not self.shard_ids:
            return self
        if self.shards is None:
            raise ValueError("discord.shard_ids needs discord.shards (the total shard count)")
        wrong = [i for i in self.shard_ids if not 0 <= i < self.shards]
        if wrong:
            raise ValueError(
                f"discord.shard_ids {wrong} are not shards of {self.shards} "
                f"(0 to {self.shards - 1})"
            )
        return self

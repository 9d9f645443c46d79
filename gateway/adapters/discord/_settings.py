"""The ``discord`` section of the configuration."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr


class DiscordSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    token: SecretStr | None = Field(None, description="DISCORD_BOT_TOKEN.")
    api_url: str | None = Field(
        None, description="REST API base URL (…/api/v10); unset: Discord's own."
    )
    command_guilds: list[int] = Field(
        default_factory=list,
        description=(
            "Guild ids to register the slash commands in (instant, for testing); "
            "empty: register them globally."
        ),
    )

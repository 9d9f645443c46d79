"""The ``slack`` section of the configuration."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, SecretStr


class SlackSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    bot_token: SecretStr | None = Field(None, description="SLACK_BOT_TOKEN.")
    app_token: SecretStr | None = Field(None, description="SLACK_APP_TOKEN (Socket Mode).")
    signing_secret: SecretStr | None = Field(None, description="SLACK_SIGNING_SECRET.")
    api_url: str | None = Field(None, description="Web API base URL; unset: Slack's own.")
    events_path: str = Field(
        "/slack/events", pattern=r"^/[A-Za-z0-9/_-]*$", description="Events API request path."
    )

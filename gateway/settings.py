"""Settings of the gateway layer: sessions, auth, HTTP and the platforms."""

from __future__ import annotations

import re
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

_WEBHOOK_SECRET = re.compile(r"[A-Za-z0-9_-]{1,256}")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SessionsSettings(_Section):
    """The ``sessions`` section: scope, expiry and concurrency."""

    idle_minutes: float = Field(240, gt=0)
    daily_reset_hour: int | None = Field(4, ge=0, le=23)
    timezone: str = "UTC"
    scope: Literal["user", "chat"] = "user"
    threads: Literal["separate", "merged"] = "separate"
    busy: Literal["queue", "interrupt"] = "queue"
    max_live: int = Field(1000, gt=0)
    max_concurrent_turns: int = Field(64, gt=0)
    handoff: bool = True

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {value!r}") from exc
        return value


class AuthSettings(_Section):
    """The ``auth`` section: deny by default."""

    admins: list[str] = Field(default_factory=list, description="platform:id of each admin.")
    allowed_users: list[str] = Field(default_factory=list)
    policy: Literal["allowlist", "pairing", "open"] = "allowlist"
    rate_limit_per_minute: int = Field(20, ge=0, description="Messages per user; 0 disables.")
    pairing_code_ttl_minutes: int = Field(60, gt=0)
    pairing_codes_per_hour: int = Field(3, gt=0, description="Codes one unknown user may ask for.")


class HTTPSettings(_Section):
    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)


class GatewaySettings(_Section):
    """The ``gateway`` section: the service process."""

    http: HTTPSettings = Field(default_factory=HTTPSettings)
    shutdown_timeout: float = Field(30.0, gt=0)
    group_require_mention: bool = True


class TelegramSettings(_Section):
    """The ``telegram`` section: long polling by default, a webhook when ``webhook_url`` is set."""

    token: SecretStr | None = Field(None, description="TELEGRAM_BOT_TOKEN.")
    webhook_url: str | None = Field(
        None, description="Public HTTPS URL that reaches /telegram/webhook; unset: long polling."
    )
    webhook_secret: SecretStr | None = Field(
        None, description="Required with webhook_url; checked on every webhook request."
    )
    base_url: str | None = Field(None, description="Bot API URL (a local Bot API server).")
    base_file_url: str | None = Field(None, description="Bot API file URL (local server).")
    drop_pending_updates: bool = False
    streaming: bool = Field(True, description="Stream answers by editing one message (DMs).")
    merge_window_seconds: float = Field(
        1.5, ge=0, le=30, description="How long a long text waits for the rest of a split paste."
    )

    @model_validator(mode="after")
    def _webhook_secret(self) -> TelegramSettings:
        secret = self.webhook_secret.get_secret_value() if self.webhook_secret else ""
        if self.webhook_url and not secret:
            raise ValueError("telegram.webhook_url needs telegram.webhook_secret")
        if secret and not _WEBHOOK_SECRET.fullmatch(secret):
            raise ValueError("telegram.webhook_secret must be 1-256 of A-Z, a-z, 0-9, _ and -")
        return self


class DiscordSettings(_Section):
    token: SecretStr | None = Field(None, description="DISCORD_BOT_TOKEN.")
    api_url: str | None = Field(
        None, description="REST API base URL (…/api/v10); unset: Discord's own."
    )


class SlackSettings(_Section):
    bot_token: SecretStr | None = Field(None, description="SLACK_BOT_TOKEN.")
    app_token: SecretStr | None = Field(None, description="SLACK_APP_TOKEN (Socket Mode).")
    signing_secret: SecretStr | None = Field(None, description="SLACK_SIGNING_SECRET.")
    api_url: str | None = Field(None, description="Web API base URL; unset: Slack's own.")
    events_path: str = Field(
        "/slack/events", pattern=r"^/[A-Za-z0-9/_-]*$", description="Events API request path."
    )

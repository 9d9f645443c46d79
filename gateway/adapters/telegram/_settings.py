"""The ``telegram`` section of the configuration."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from memory.settings import RESTART

_WEBHOOK_SECRET = re.compile(r"[A-Za-z0-9_-]{1,256}")
DESCRIPTION_MAX = 512
SHORT_DESCRIPTION_MAX = 120


class TelegramSettings(BaseModel):
    """The ``telegram`` section: long polling by default, a webhook when ``webhook_url`` is set."""

    model_config = ConfigDict(extra="forbid")

    token: Annotated[SecretStr | None, RESTART] = Field(None, description="TELEGRAM_BOT_TOKEN.")
    webhook_url: Annotated[str | None, RESTART] = Field(
        None, description="Public HTTPS URL that reaches /telegram/webhook; unset: long polling."
    )
    webhook_secret: Annotated[SecretStr | None, RESTART] = Field(
        None, description="Required with webhook_url; checked on every webhook request."
    )
    base_url: Annotated[str | None, RESTART] = Field(
        None, description="Bot API URL (a local Bot API server)."
    )
    base_file_url: Annotated[str | None, RESTART] = Field(
        None, description="Bot API file URL (local server)."
    )
    drop_pending_updates: Annotated[bool, RESTART] = False
    streaming: Annotated[bool, RESTART] = Field(
        True, description="Stream answers by editing one message (DMs)."
    )
    merge_window_seconds: Annotated[float, RESTART] = Field(
        1.5, ge=0, le=30, description="How long a long text waits for the rest of a split paste."
    )
    description: Annotated[str | None, RESTART] = Field(
        None,
        description="What an empty chat with the bot shows (setMyDescription); at most 512 "
        "characters; unset: left as it is.",
    )
    short_description: Annotated[str | None, RESTART] = Field(
        None,
        description="The bot's profile text and shared links (setMyShortDescription); at most "
        "120 characters; unset: left as it is.",
    )

    @model_validator(mode="after")
    def _descriptions(self) -> TelegramSettings:
        for key, value, limit in (
            ("description", self.description, DESCRIPTION_MAX),
            ("short_description", self.short_description, SHORT_DESCRIPTION_MAX),
        ):
            if value is not None and len(value) > limit:
                raise ValueError(
                    f"telegram.{key} is {len(value)} characters; Telegram allows at most {limit}"
                )
        return self

    @model_validator(mode="after")
    def _webhook_secret(self) -> TelegramSettings:
        secret = self.webhook_secret.get_secret_value() if self.webhook_secret else ""
        if self.webhook_url and not secret:
            raise ValueError("telegram.webhook_url needs telegram.webhook_secret")
        if secret and not _WEBHOOK_SECRET.fullmatch(secret):
            raise ValueError("telegram.webhook_secret must be 1-256 of A-Z, a-z, 0-9, _ and -")
        return self

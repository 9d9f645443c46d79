"""The ``telegram`` section of the configuration."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from memory.settings import RESTART

_WEBHOOK_SECRET = re.compile(r"[A-Za-z0-9_-]{1,256}")


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

    @model_validator(mode="after")
    def _webhook_secret(self) -> TelegramSettings:
        secret = self.webhook_secret.get_secret_value() if self.webhook_secret else ""
        if self.webhook_url and not secret:
            raise ValueError("telegram.webhook_url needs telegram.webhook_secret")
        if secret and not _WEBHOOK_SECRET.fullmatch(secret):
            raise ValueError("telegram.webhook_secret must be 1-256 of A-Z, a-z, 0-9, _ and -")
        return self

"""The ``slack`` section of the configuration, and what makes it usable.

Two ways to connect: with ``app_token`` (``SLACK_APP_TOKEN``, ``xapp-…``) the
adapter uses Socket Mode — an outbound websocket, no public URL and no signing
secret; without it, Slack posts to ``events_path`` and ``commands_path`` on the
gateway's HTTP server, signed with ``signing_secret``. Both need the bot token
(``SLACK_BOT_TOKEN``, ``xoxb-…``) for the Web API.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from memory.settings import RESTART

PATH = r"^/[A-Za-z0-9/_-]*$"
BOT_TOKEN_PREFIX = "xoxb-"
APP_TOKEN_PREFIX = "xapp-"


class SlackSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    bot_token: Annotated[SecretStr | None, RESTART] = Field(
        None, description="SLACK_BOT_TOKEN (xoxb-…)."
    )
    app_token: Annotated[SecretStr | None, RESTART] = Field(
        None, description="SLACK_APP_TOKEN (xapp-…): set, the adapter uses Socket Mode."
    )
    signing_secret: Annotated[SecretStr | None, RESTART] = Field(
        None, description="SLACK_SIGNING_SECRET: checks requests in HTTP mode."
    )
    api_url: Annotated[str | None, RESTART] = Field(
        None, description="Web API base URL; unset: Slack's own."
    )
    events_path: Annotated[str, RESTART] = Field(
        "/slack/events", pattern=PATH, description="Events API path."
    )
    commands_path: Annotated[str, RESTART] = Field(
        "/slack/commands", pattern=PATH, description="Slash commands path (HTTP mode)."
    )
    slash_command: Annotated[str, RESTART] = Field(
        "/chorus",
        pattern=r"^/[a-z0-9_-]{1,31}$",
        description="The app's slash command (as in the app manifest).",
    )
    socket_ping_interval: Annotated[float, RESTART] = Field(
        10.0, gt=0, le=120, description="Seconds between Socket Mode pings."
    )

    @property
    def socket_mode(self) -> bool:
        return _set(self.app_token)


def _set(value: SecretStr | None) -> bool:
    return value is not None and bool(value.get_secret_value().strip())


def has_signing_secret(settings: SlackSettings) -> bool:
    return _set(settings.signing_secret)


def is_configured(settings: SlackSettings) -> bool:
    """Whether the operator set Slack up at all (either token)."""
    return _set(settings.bot_token) or _set(settings.app_token)


def problem(settings: SlackSettings) -> str | None:
    """What keeps a configured Slack section from working, naming the variable; None if usable."""
    bot = settings.bot_token.get_secret_value().strip() if settings.bot_token else ""
    app = settings.app_token.get_secret_value().strip() if settings.app_token else ""
    if not bot:
        return (
            "slack.bot_token (SLACK_BOT_TOKEN) is not set: Slack needs the bot token "
            f"({BOT_TOKEN_PREFIX}…, under OAuth & Permissions) as well as SLACK_APP_TOKEN"
        )
    if bot.startswith(APP_TOKEN_PREFIX):
        return (
            "slack.bot_token (SLACK_BOT_TOKEN) holds an app-level token (xapp-…): "
            f"it takes the bot token ({BOT_TOKEN_PREFIX}…); the xapp- one goes in SLACK_APP_TOKEN"
        )
    if not bot.startswith(BOT_TOKEN_PREFIX):
        return (
            "slack.bot_token (SLACK_BOT_TOKEN) is not a bot token: it starts with "
            f"{BOT_TOKEN_PREFIX} (OAuth & Permissions → Bot User OAuth Token)"
        )
    if app and not app.startswith(APP_TOKEN_PREFIX):
        which = "a bot token (xoxb-…)" if app.startswith(BOT_TOKEN_PREFIX) else "something else"
        return (
            f"slack.app_token (SLACK_APP_TOKEN) holds {which}: it takes an app-level token "
            f"({APP_TOKEN_PREFIX}…, Basic Information → App-Level Tokens, scope connections:write)"
        )
    if not app and not _set(settings.signing_secret):
        return (
            "slack needs SLACK_APP_TOKEN (Socket Mode, no public URL) or "
            "SLACK_SIGNING_SECRET (Events API over HTTP); neither is set"
        )
    return None

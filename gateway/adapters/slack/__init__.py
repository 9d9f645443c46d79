"""Slack, through slack-bolt.

The SDK is imported only when the adapter is built (or ``SlackAdapter`` is
asked for): importing this package for its settings or its spec does not load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gateway.adapters._base import BaseAdapter
from gateway.adapters._spec import PlatformContext, PlatformSpec
from gateway.adapters._support import has_secret
from gateway.adapters.slack._settings import SlackSettings

if TYPE_CHECKING:
    from gateway.adapters.slack._adapter import SlackAdapter

__all__ = ["SPEC", "SlackAdapter", "SlackSettings"]


def _build(settings: SlackSettings, context: PlatformContext) -> BaseAdapter:
    from gateway.adapters.slack._adapter import SlackAdapter

    return SlackAdapter(settings)


async def _describe(settings: SlackSettings) -> tuple[bool, str]:
    from gateway.adapters.slack._client import describe_bot

    return await describe_bot(settings)


SPEC = PlatformSpec(
    name="slack",
    settings=SlackSettings,
    enabled=lambda s: has_secret(s.bot_token) and has_secret(s.signing_secret),
    build=_build,
    describe=_describe,
    enable_hint="SLACK_BOT_TOKEN (with SLACK_SIGNING_SECRET)",
    env={
        "SLACK_BOT_TOKEN": "bot_token",
        "SLACK_APP_TOKEN": "app_token",
        "SLACK_SIGNING_SECRET": "signing_secret",
    },
    sdk=("slack_bolt", "slack_sdk"),
    configured=lambda s: has_secret(s.bot_token),
)


def __getattr__(name: str) -> Any:
    if name == "SlackAdapter":
        from gateway.adapters.slack._adapter import SlackAdapter

        return SlackAdapter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

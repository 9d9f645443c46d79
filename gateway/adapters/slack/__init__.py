"""Slack, through slack-bolt.

The SDK is imported only when the adapter is built (or ``SlackAdapter`` is
asked for): importing this package for its settings or its spec does not load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.adapters._spec import PlatformSpec, lazy_exports
from gateway.adapters.slack._settings import SlackSettings, is_configured

if TYPE_CHECKING:
    from gateway.adapters.slack._adapter import SlackAdapter

__all__ = ["SPEC", "SlackAdapter", "SlackSettings"]

SPEC = PlatformSpec(
    name="slack",
    settings=SlackSettings,
    enabled=is_configured,
    adapter="gateway.adapters.slack._adapter:SlackAdapter",
    describe_bot="gateway.adapters.slack._client:describe_bot",
    enable_hint="SLACK_BOT_TOKEN (with SLACK_APP_TOKEN, or SLACK_SIGNING_SECRET)",
    env={
        "SLACK_BOT_TOKEN": "bot_token",
        "SLACK_APP_TOKEN": "app_token",
        "SLACK_SIGNING_SECRET": "signing_secret",
    },
    sdk=("slack_bolt", "slack_sdk"),
)

__getattr__ = lazy_exports(__name__, {"SlackAdapter": SPEC.adapter})

"""Telegram, through python-telegram-bot.

The SDK is imported only when the adapter is built (or ``TelegramAdapter`` is
asked for): importing this package for its settings or its spec does not load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.adapters._spec import PlatformSpec, lazy_exports
from gateway.adapters._support import has_secret
from gateway.adapters.telegram._settings import TelegramSettings
from gateway.events import InboundMessage

if TYPE_CHECKING:
    from gateway.adapters.telegram._adapter import TelegramAdapter

__all__ = ["SPEC", "TelegramAdapter", "TelegramSettings"]


def _streams(settings: TelegramSettings, msg: InboundMessage) -> bool:
    """Edits are paced per chat: stream in direct messages only, and only when asked to."""
    return settings.streaming and msg.is_direct


SPEC = PlatformSpec(
    name="telegram",
    settings=TelegramSettings,
    enabled=lambda s: has_secret(s.token),
    adapter="gateway.adapters.telegram._adapter:TelegramAdapter",
    describe_bot="gateway.adapters.telegram._bot:describe_bot",
    enable_hint="TELEGRAM_BOT_TOKEN",
    env={"TELEGRAM_BOT_TOKEN": "token"},
    sdk=("telegram",),
    streams=_streams,
)

__getattr__ = lazy_exports(__name__, {"TelegramAdapter": SPEC.adapter})

"""Telegram, through python-telegram-bot.

The SDK is imported only when the adapter is built (or ``TelegramAdapter`` is
asked for): importing this package for its settings or its spec does not load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gateway.adapters._base import BaseAdapter
from gateway.adapters._spec import PlatformContext, PlatformSpec
from gateway.adapters._support import has_secret
from gateway.adapters.telegram._settings import TelegramSettings
from gateway.events import InboundMessage

if TYPE_CHECKING:
    from gateway.adapters.telegram._adapter import TelegramAdapter

__all__ = ["SPEC", "TelegramAdapter", "TelegramSettings"]


def _build(settings: TelegramSettings, context: PlatformContext) -> BaseAdapter:
    from gateway.adapters.telegram._adapter import TelegramAdapter

    return TelegramAdapter(settings, vision=context.vision)


async def _describe(settings: TelegramSettings) -> tuple[bool, str]:
    from gateway.adapters.telegram._bot import describe_bot

    return await describe_bot(settings)


def _streams(settings: TelegramSettings, msg: InboundMessage) -> bool:
    """Edits are paced per chat: stream in direct messages only, and only when asked to."""
    return settings.streaming and msg.is_direct


SPEC = PlatformSpec(
    name="telegram",
    settings=TelegramSettings,
    enabled=lambda s: has_secret(s.token),
    build=_build,
    describe=_describe,
    enable_hint="TELEGRAM_BOT_TOKEN",
    env={"TELEGRAM_BOT_TOKEN": "token"},
    sdk=("telegram",),
    streams=_streams,
)


def __getattr__(name: str) -> Any:
    if name == "TelegramAdapter":
        from gateway.adapters.telegram._adapter import TelegramAdapter

        return TelegramAdapter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

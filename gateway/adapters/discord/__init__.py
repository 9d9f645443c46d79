"""Discord, through discord.py.

The SDK is imported only when the adapter is built (or ``DiscordAdapter`` is
asked for): importing this package for its settings or its spec does not load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gateway.adapters._base import BaseAdapter
from gateway.adapters._spec import PlatformContext, PlatformSpec
from gateway.adapters._support import has_secret
from gateway.adapters.discord._settings import DiscordSettings

if TYPE_CHECKING:
    from gateway.adapters.discord._adapter import DiscordAdapter

__all__ = ["SPEC", "DiscordAdapter", "DiscordSettings"]


def _build(settings: DiscordSettings, context: PlatformContext) -> BaseAdapter:
    from gateway.adapters.discord._adapter import DiscordAdapter

    return DiscordAdapter(settings)


async def _describe(settings: DiscordSettings) -> tuple[bool, str]:
    from gateway.adapters.discord._client import describe_bot

    return await describe_bot(settings)


SPEC = PlatformSpec(
    name="discord",
    settings=DiscordSettings,
    enabled=lambda s: has_secret(s.token),
    build=_build,
    describe=_describe,
    enable_hint="DISCORD_BOT_TOKEN",
    env={"DISCORD_BOT_TOKEN": "token"},
    sdk=("discord",),
)


def __getattr__(name: str) -> Any:
    if name == "DiscordAdapter":
        from gateway.adapters.discord._adapter import DiscordAdapter

        return DiscordAdapter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Discord, through discord.py.

The SDK is imported only when the adapter is built (or ``DiscordAdapter`` is
asked for): importing this package for its settings or its spec does not load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.adapters._spec import PlatformSpec, lazy_exports
from gateway.adapters._support import has_secret
from gateway.adapters.discord._settings import DiscordSettings

if TYPE_CHECKING:
    from gateway.adapters.discord._adapter import DiscordAdapter

__all__ = ["SPEC", "DiscordAdapter", "DiscordSettings"]

SPEC = PlatformSpec(
    name="discord",
    settings=DiscordSettings,
    enabled=lambda s: has_secret(s.token),
    adapter="gateway.adapters.discord._adapter:DiscordAdapter",
    describe_bot="gateway.adapters.discord._client:describe_bot",
    enable_hint="DISCORD_BOT_TOKEN",
    env={"DISCORD_BOT_TOKEN": "token"},
    sdk=("discord",),
)

__getattr__ = lazy_exports(__name__, {"DiscordAdapter": SPEC.adapter})

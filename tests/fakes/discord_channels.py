"""Channel permissions in the fake Discord, as the API shapes them.

The bot's role (``@everyone`` here) may view channels, send messages (in threads
too) and read their history. ``withhold(channel, permission)`` takes one of those
away in one channel the way a server admin does: the channel gets a permission
overwrite that denies it (``CHANNEL_UPDATE`` with ``permission_overwrites``, type 0,
the role), and the bot's posts there are refused with 403 Missing Permissions
(50013) from then on.
"""

from __future__ import annotations

from typing import Any

from tests.fakes.discord_data import GUILD_ID

VIEW_CHANNEL = 1 << 10
SEND_MESSAGES = 1 << 11
READ_MESSAGE_HISTORY = 1 << 16
SEND_MESSAGES_IN_THREADS = 1 << 38
EVERYONE = VIEW_CHANNEL | SEND_MESSAGES | READ_MESSAGE_HISTORY | SEND_MESSAGES_IN_THREADS
"""The permissions of the bot's role in the fake guild."""


class ChannelsServer:
    """Channel permission changes (a mixin of ``FakeDiscord``)."""

    no_send: set[int]

    def withhold(
        self,
        channel_id: int,
        permission: int,
        *,
        name: str = "general",
        guild_id: int = GUILD_ID,
        threads: tuple[int, ...] = (),
    ) -> None:
        """A server admin denies the bot's role ``permission`` in the text channel (and
        so in its ``threads``, which take their permissions from it)."""
        overwrite = {"id": str(guild_id), "type": 0, "allow": "0", "deny": str(permission)}
        channel: dict[str, Any] = {
            "id": str(channel_id),
            "type": 0,
            "name": name,
            "position": 0,
            "permission_overwrites": [overwrite],
            "guild_id": str(guild_id),
        }
        self.no_send.update({channel_id, *threads})
        self.dispatch("CHANNEL_UPDATE", channel)

    def dispatch(self, event: str, data: Any) -> None:
        raise NotImplementedError

"""Buttons (message components) under a message: a press is the command the button
stands for, run for whoever pressed it and answered to them alone (ephemeral).

Each button is a ``DynamicItem`` whose ``custom_id`` is its command: discord.py
routes a press by that id alone, not by a view kept in memory, so the buttons of a
message sent before a restart still work after it (``listen_for_presses``).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Self
from weakref import WeakKeyDictionary

import discord

__all__ = ["ChoiceView", "listen_for_presses"]

CUSTOM_ID_CHARS = 100
"""The longest ``custom_id`` Discord takes."""

Press = Callable[[discord.Interaction[Any], str], Awaitable[None]]

_presses: WeakKeyDictionary[discord.Client, Press] = WeakKeyDictionary()
"""Each client's press handler (the adapter's)."""


class CommandButton(
    discord.ui.DynamicItem[discord.ui.Button[discord.ui.View]], template=r"/[^\n]{1,99}"
):
    """A button whose ``custom_id`` is the command a press runs."""

    def __init__(self, label: str, command: str, style: discord.ButtonStyle) -> None:
        super().__init__(discord.ui.Button(label=label, custom_id=command, style=style))
        self.command = command

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: re.Match[str],
    ) -> Self:
        label = getattr(item, "label", None) or ""
        style = getattr(item, "style", discord.ButtonStyle.secondary)
        return cls(label, match.string, style)

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        press = _presses.get(interaction.client)
        if press is not None:
            await press(interaction, self.command)


class ChoiceView(discord.ui.View):
    """One button per ``(label, command)``; the command is the button's ``custom_id``."""

    def __init__(self, choices: Sequence[tuple[str, str]]) -> None:
        super().__init__(timeout=None)
        for index, (label, command) in enumerate(choices):
            if not 1 <= len(command) <= CUSTOM_ID_CHARS or not command.startswith("/"):
                continue
            style = discord.ButtonStyle.success if index == 0 else discord.ButtonStyle.danger
            self.add_item(CommandButton(label, command, style))


def listen_for_presses(client: discord.Client, on_press: Press) -> None:
    """Run ``on_press`` for every press of a ``ChoiceView`` button ``client`` receives,
    whenever its message was sent."""
    _presses[client] = on_press
    client.add_dynamic_items(CommandButton)

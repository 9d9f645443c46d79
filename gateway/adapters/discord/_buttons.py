"""Buttons (message components) under a message: a press is the command the button
stands for, run for whoever pressed it and answered to them alone (ephemeral)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import discord

__all__ = ["ChoiceView"]

CUSTOM_ID_CHARS = 100
"""The longest ``custom_id`` Discord takes."""

Press = Callable[[discord.Interaction[Any], str], Awaitable[None]]


class ChoiceView(discord.ui.View):
    """One button per ``(label, command)``; the command is the button's ``custom_id``."""

    def __init__(self, choices: Sequence[tuple[str, str]], on_press: Press) -> None:
        super().__init__(timeout=None)
        for index, (label, command) in enumerate(choices):
            if not 1 <= len(command) <= CUSTOM_ID_CHARS:
                continue
            style = discord.ButtonStyle.success if index == 0 else discord.ButtonStyle.danger
            button: discord.ui.Button[ChoiceView] = discord.ui.Button(
                label=label, custom_id=command, style=style
            )
            button.callback = _pressed(on_press, command)  # type: ignore[method-assign, assignment]
            self.add_item(button)


def _pressed(
    on_press: Press, command: str
) -> Callable[[discord.Interaction[Any]], Awaitable[None]]:
    async def callback(interaction: discord.Interaction[Any]) -> None:
        await on_press(interaction, command)

    return callback

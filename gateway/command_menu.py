"""How a command's subcommands and their arguments look in a platform's command picker.

A command whose arguments are a subcommand and its values (``/admin end <who>``)
describes them here, so a platform with structured commands (Discord's application
subcommands) can offer each subcommand with its options, and a fixed set of values as
choices. What the picker gathers becomes the same text a person would type
(``subcommand_args``), so it is answered by the one handler that reads typed commands.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["MenuOption", "MenuSubcommand", "subcommand_args"]


@dataclass(frozen=True, slots=True)
class MenuOption:
    """One argument of a subcommand."""

    name: str
    """Lower case, no blanks (a picker's option name)."""
    description: str
    required: bool = True
    choices: tuple[str, ...] = ()
    """The only values it takes (empty: any text)."""
    glue: str = " "
    """What joins its value to the text before it (``=`` for ``tokens_per_day=5``)."""


@dataclass(frozen=True, slots=True)
class MenuSubcommand:
    """A subcommand as a picker shows it; its options in the order they are typed."""

    name: str
    description: str
    options: tuple[MenuOption, ...] = ()


def subcommand_args(sub: MenuSubcommand, values: Mapping[str, object]) -> str:
    """The arguments a person would type for ``sub`` with these option ``values``
    (``end discord:42``); options left empty are left out."""
    text = sub.name
    for option in sub.options:
        value = values.get(option.name)
        if value is None:
            continue
        value_text = " ".join(str(value).split())
        if value_text:
            text += option.glue + value_text
    return text

"""``/admin``'s subcommands as structured pickers show them: every argument the usage
names is an option, and what the picker gathers reads back as the typed command."""

from __future__ import annotations

from gateway.command_menu import MenuOption, MenuSubcommand, subcommand_args
from gateway.commands._admin import ADMIN_SUBCOMMANDS, admin_menu


def test_each_subcommand_offers_the_arguments_its_usage_names() -> None:
    menu = {sub.name: sub for sub in admin_menu()}
    assert list(menu) == [sub.name for sub in ADMIN_SUBCOMMANDS]
    for sub in ADMIN_SUBCOMMANDS:
        options = menu[sub.name].options
        assert bool(sub.usage) == bool(options), sub.name
        if sub.usage.startswith("<"):
            assert options[0].required, sub.name
        if sub.usage.startswith("["):
            assert not any(o.required for o in options), sub.name
        assert all(o.name.isidentifier() and o.name.islower() for o in options)
        assert all(1 <= len(o.description) <= 100 for o in options)


def test_picked_values_read_back_as_the_typed_arguments() -> None:
    budget = next(s for s in admin_menu() if s.name == "budget")
    typed = subcommand_args(
        budget, {"person": "discord:7", "limit": "tokens_per_day", "value": "5000"}
    )
    assert typed == "budget discord:7 tokens_per_day=5000"
    assert subcommand_args(budget, {"person": "discord:7", "limit": "reset"}) == (
        "budget discord:7 reset"
    )
    memory = next(s for s in admin_menu() if s.name == "memory")
    assert subcommand_args(memory, {}) == "memory"
    assert subcommand_args(memory, {"action": "approve", "text": " all "}) == "memory approve all"


def test_blank_values_are_left_out_and_inner_blanks_collapse() -> None:
    sub = MenuSubcommand("x", "", (MenuOption("a", "a"), MenuOption("b", "b", required=False)))
    assert subcommand_args(sub, {"a": "two  words\n", "b": "   "}) == "x two words"

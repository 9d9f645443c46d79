"""The bot's command menu per scope and its descriptions, as the fake Bot API saw them."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config import load_settings
from gateway.errors import ConfigError
from tests.telegram.conftest import ADMIN, ANN, GatewayFactory


async def test_menus_per_scope_admin_commands_only_in_admins_private_chats(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    tg = gw.telegram
    assert set(tg.commands) == {"all_private_chats", "all_group_chats", f"chat:{ADMIN}"}
    private = {c["command"] for c in tg.commands["all_private_chats"]}
    groups = {c["command"] for c in tg.commands["all_group_chats"]}
    admin = {c["command"] for c in tg.commands[f"chat:{ADMIN}"]}
    assert {"start", "help", "new", "status", "stop", "secret", "cancel"} <= private
    assert "admin" not in private and "admin" not in groups
    # a group's menu has only what has a use there: no /start, no secrets
    assert {"help", "new", "stop", "undo", "retry", "whoami"} <= groups
    assert not {"start", "secret", "cancel"} & groups
    assert groups < private
    assert "admin" in admin and private < admin
    assert f"chat:{ANN}" not in tg.commands
    for scope in tg.commands.values():
        assert all(c["description"] for c in scope)
    # no description configured: the bot's own ones are left as they are
    assert not tg.calls_of("setMyDescription") and not tg.calls_of("setMyShortDescription")


async def test_descriptions_are_set_from_the_config(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway(
        CHORUS_TELEGRAM__DESCRIPTION="I answer questions about the team's services.",
        CHORUS_TELEGRAM__SHORT_DESCRIPTION="The team's assistant",
    )
    assert gw.telegram.description == "I answer questions about the team's services."
    assert gw.telegram.short_description == "The team's assistant"


@pytest.mark.parametrize(("key", "limit"), [("DESCRIPTION", 512), ("SHORT_DESCRIPTION", 120)])
def test_a_description_longer_than_telegram_allows_is_a_config_error(
    chorus_home: Path, key: str, limit: int
) -> None:
    chorus_home.mkdir(mode=0o700)
    base = {"CHORUS_HOME": str(chorus_home), "TELEGRAM_BOT_TOKEN": "1:x"}
    ok = load_settings(chorus_home, {**base, f"CHORUS_TELEGRAM__{key}": "x" * limit})
    assert ok.telegram is not None
    with pytest.raises(ConfigError, match=f"telegram.{key.lower()} is {limit + 1} characters"):
        load_settings(chorus_home, {**base, f"CHORUS_TELEGRAM__{key}": "x" * (limit + 1)})

"""Approval of an ``ask`` tool on Discord: the prompt comes with buttons (message
components); a press runs as ``/approve ID`` / ``/deny ID`` for whoever pressed it and
is answered to them alone."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.discord.conftest import ADMIN, ADMIN_ID, ANN, BOB, DiscordGateway, GatewayFactory
from tests.fakes.discord_api import Posted
from tests.fakes.discord_data import CHANNEL_ID, GUILD_ID
from tests.tools.conftest import calls, stdio_server, write_config
from tests.waiting import until

ASK_ECHO = [
    {"tools": ["demo__echo"], "action": "ask"},
    {"tools": ["*__*"], "action": "allow"},
]


async def _gateway(make_gateway: GatewayFactory, home: Path, state: Path) -> DiscordGateway:
    write_config(home, {"demo": stdio_server(state)}, ASK_ECHO)
    gw = await make_gateway()
    mcp = gw.stack.mcp
    assert mcp is not None
    await until(lambda: all(h.up or h.last_error for h in mcp.health()), what="servers tried")
    return gw


async def test_a_press_of_the_person_asked_approves_and_no_one_else_s_does(
    make_gateway: GatewayFactory, chorus_home: Path, tmp_path: Path
) -> None:
    state = tmp_path / "demo"
    gw = await _gateway(make_gateway, chorus_home, state)
    fake, llm = gw.discord, gw.server
    await fake.wait_for(lambda: bool(fake.command_names()), what="the commands sync")
    llm.tool_call("demo__echo", {"text": "discord"})
    llm.reply("Echoed on Discord.")
    fake.message(
        "please echo", author=ANN, channel_id=CHANNEL_ID, guild_id=GUILD_ID, mentions_bot=True
    )

    await until(lambda: any(p.data.get("components") for p in fake.posted_in(CHANNEL_ID)))
    prompt = next(p for p in fake.posted_in(CHANNEL_ID) if p.data.get("components"))
    buttons = [c for row in prompt.data["components"] for c in row["components"]]
    assert [b["label"] for b in buttons] == ["Approve", "Deny"]
    approve = buttons[0]["custom_id"]
    assert approve.startswith("/approve ") and "Tool: echo" in prompt.content

    bobs = fake.press(prompt.data, approve, user=BOB, guild_id=GUILD_ID)
    await fake.wait_answered(bobs)
    assert bobs.ephemeral and "not yours" in bobs.text
    assert calls(state) == [] and len(llm.requests) == 1

    anns = fake.press(prompt.data, approve, user=ANN, guild_id=GUILD_ID)
    await fake.wait_answered(anns)
    assert anns.ephemeral and "Approved" in anns.text
    await until(lambda: any(p.content == "Echoed on Discord." for p in fake.posted_in(CHANNEL_ID)))
    assert [c["arguments"] for c in calls(state)] == [{"text": "discord"}]


async def test_admin_approval_reaches_the_admin_s_direct_messages_with_buttons(
    make_gateway: GatewayFactory, chorus_home: Path, tmp_path: Path
) -> None:
    state = tmp_path / "demo"
    write_config(chorus_home, {"demo": stdio_server(state)}, ASK_ECHO)
    config = chorus_home / "config.yaml"
    loaded = yaml.safe_load(config.read_text(encoding="utf-8"))
    loaded["tools"]["approval"] = "admin"
    config.write_text(yaml.safe_dump(loaded), encoding="utf-8")
    gw = await make_gateway()
    fake, llm = gw.discord, gw.server
    await fake.wait_for(lambda: bool(fake.command_names()), what="the commands sync")
    llm.tool_call("demo__echo", {"text": "by an admin"})
    llm.reply("The admin let me.")
    fake.message(
        "please echo", author=ANN, channel_id=CHANNEL_ID, guild_id=GUILD_ID, mentions_bot=True
    )

    def in_a_dm() -> list[Posted]:
        return [p for p in fake.posted if p.data.get("components") and p.channel_id != CHANNEL_ID]

    await until(lambda: bool(in_a_dm()), what="the prompt in the admin's DM")
    [prompt] = in_a_dm()
    assert f"for discord:{ANN['id']}" in prompt.content
    assert fake.dm_channels.get(ADMIN_ID) == prompt.channel_id
    approve = prompt.data["components"][0]["components"][0]["custom_id"]
    pressed = fake.press(prompt.data, approve, user=ADMIN)
    await fake.wait_answered(pressed)
    assert "Approved" in pressed.text
    await until(lambda: any(p.content == "The admin let me." for p in fake.posted_in(CHANNEL_ID)))
    assert [c["arguments"] for c in calls(state)] == [{"text": "by an admin"}]

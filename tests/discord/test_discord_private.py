"""Answers for one person, typed in a server channel, go to a DM with them."""

from __future__ import annotations

from gateway import _texts as t
from tests.discord.conftest import ADMIN, ADMIN_ID, ANN, ANN_ID, BOB_ID, DM_ANN, GatewayFactory
from tests.fakes.discord_data import BOT_ID, CHANNEL_ID, GUILD_ID


async def test_memory_and_admin_users_typed_in_a_channel_arrive_in_dms(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    fake, llm = gw.discord, gw.server
    llm.tool_call("memory", {"action": "add", "target": "user", "content": "Ann drinks green tea"})
    llm.reply("Noted, Ann.")
    fake.message("remember: I drink green tea", author=ANN, channel_id=DM_ANN)
    await fake.wait_posted(DM_ANN, 1)

    asked = fake.message(
        f"<@{BOT_ID}> /memory",
        author=ANN,
        channel_id=CHANNEL_ID,
        guild_id=GUILD_ID,
        mentions_bot=True,
    )
    fake.message(
        f"<@{BOT_ID}> /admin users",
        author=ADMIN,
        channel_id=CHANNEL_ID,
        guild_id=GUILD_ID,
        mentions_bot=True,
    )
    notes = await fake.wait_posted(CHANNEL_ID, 2)
    profile = (await fake.wait_posted(DM_ANN, 2))[1]
    assert "Ann drinks green tea" in profile.content
    dm_admin = fake.dm_channels[ADMIN_ID]
    [users] = await fake.wait_posted(dm_admin, 1)
    assert f"discord:{BOB_ID}" in users.content
    assert [n.content for n in notes] == [t.SENT_PRIVATELY] * 2
    assert notes[0].reference == int(asked["id"])
    await gw.settle()
    channel = " ".join(p.content for p in fake.posted_in(CHANNEL_ID))
    assert "green tea" not in channel and f"discord:{BOB_ID}" not in channel
    assert fake.dm_channels[ANN_ID] == DM_ANN


async def test_someone_who_takes_no_dms_is_told_and_nothing_leaks(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    fake = gw.discord
    fake.closed_dms.add(ADMIN_ID)
    fake.message(
        f"<@{BOT_ID}> /admin users",
        author=ADMIN,
        channel_id=CHANNEL_ID,
        guild_id=GUILD_ID,
        mentions_bot=True,
    )
    [note] = await fake.wait_posted(CHANNEL_ID, 1)
    assert f"discord:{BOB_ID}" not in note.content
    assert note.content == t.NO_PRIVATE_CHAT
    await gw.settle()
    assert fake.calls_of("POST", f"/channels/{fake.dm_channels[ADMIN_ID]}/messages", status=403)
    assert [p.content for p in fake.posted] == [t.NO_PRIVATE_CHAT]

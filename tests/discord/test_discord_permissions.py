"""A channel where the bot lacks a permission to post: one calm WARNING per channel
per hour, and an admin told once by DM which channel lacks which permission."""

from __future__ import annotations

import logging

import pytest

from tests.discord.conftest import ADMIN_ID, ANN, GatewayFactory
from tests.fakes.discord_channels import (
    READ_MESSAGE_HISTORY,
    SEND_MESSAGES,
    SEND_MESSAGES_IN_THREADS,
)
from tests.fakes.discord_data import BOT_ID, CHANNEL_ID, GUILD_ID, THREAD_ID


async def test_a_missing_send_permission_is_told_to_an_admin_once(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    gw = await make_gateway()
    fake, llm = gw.discord, gw.server
    fake.withhold(CHANNEL_ID, SEND_MESSAGES)

    def refused() -> int:
        return len(fake.calls_of("POST", f"/channels/{CHANNEL_ID}/messages", status=403))

    for count, text in enumerate(("hello?", "still there?"), start=1):
        llm.reply("An answer that cannot arrive.")
        fake.message(
            f"<@{BOT_ID}> {text}",
            author=ANN,
            channel_id=CHANNEL_ID,
            guild_id=GUILD_ID,
            mentions_bot=True,
        )
        await fake.wait_for(lambda n=count: refused() >= n, what="the refused answer")
        await gw.settle()
    await fake.wait_for(lambda: ADMIN_ID in fake.dm_channels, what="the admin's DM")
    [told] = await fake.wait_posted(fake.dm_channels[ADMIN_ID], 1)
    await gw.settle()
    assert "#general" in told.content and "Team" in told.content
    assert "lack the Send Messages permission" in told.content
    assert "Read Message History" not in told.content
    assert len(fake.posted_in(fake.dm_channels[ADMIN_ID])) == 1  # once, not per refusal
    walls = [r for r in caplog.records if "cannot write in chat" in r.getMessage()]
    assert [r.levelno for r in walls] == [logging.WARNING]  # once per channel per hour
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "An answer" not in caplog.text  # no message text in the log
    assert "skipped" not in caplog.text  # every event of the fake was read


async def test_every_permission_a_reply_lacks_is_named(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    gw = await make_gateway()
    fake, llm = gw.discord, gw.server
    fake.withhold(CHANNEL_ID, SEND_MESSAGES | READ_MESSAGE_HISTORY)
    fake.closed_dms.add(ADMIN_ID)  # the only admin takes no DMs: the log says so
    llm.reply("An answer that cannot arrive.")
    fake.message(
        f"<@{BOT_ID}> hi", author=ANN, channel_id=CHANNEL_ID, guild_id=GUILD_ID, mentions_bot=True
    )
    await fake.wait_for(
        lambda: "no admin could be told" in caplog.text, what="the note that no admin was told"
    )
    [note] = [r for r in caplog.records if "no admin could be told" in r.getMessage()]
    assert note.levelno == logging.WARNING
    assert "Send Messages and Read Message History" in note.getMessage()


async def test_in_a_thread_the_thread_permission_is_named(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    fake, llm = gw.discord, gw.server
    fake.withhold(CHANNEL_ID, SEND_MESSAGES_IN_THREADS, threads=(THREAD_ID,))
    llm.reply("An answer that cannot arrive.")
    fake.message(
        f"<@{BOT_ID}> hi", author=ANN, channel_id=THREAD_ID, guild_id=GUILD_ID, mentions_bot=True
    )
    await fake.wait_for(lambda: ADMIN_ID in fake.dm_channels, what="the admin's DM")
    [told] = await fake.wait_posted(fake.dm_channels[ADMIN_ID], 1)
    assert "lack the Send Messages in Threads permission" in told.content
    assert "a thread" in told.content and "#general" in told.content

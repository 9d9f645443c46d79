"""The message context menu "Ask chorus": the target message is the asker's context,
the answer is the interaction's response."""

from __future__ import annotations

import pytest

from tests.discord.conftest import ANN, ANN_ID, BOB, DM_ANN, GatewayFactory
from tests.fakes.discord_data import CHANNEL_ID, GUILD_ID, THREAD_ID


async def test_ask_chorus_is_registered_as_a_message_context_menu(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    gw = await make_gateway()
    fake = gw.discord
    await fake.wait_for(lambda: bool(fake.command_names()), what="the commands sync")
    menus = [c for c in fake.commands[None] if c.get("type") == 3]
    assert [m["name"] for m in menus] == ["Ask chorus"]
    assert menus[0]["description"] == ""
    assert "registering slash commands failed" not in caplog.text
    assert "options" not in menus[0] or not menus[0]["options"]


async def test_asking_about_someone_elses_message_answers_in_the_interaction(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    fake, llm = gw.discord, gw.server
    await fake.wait_for(lambda: bool(fake.command_names()), what="the commands sync")
    target = fake.message(
        "The meeting moved to Friday at 10.", author=BOB, channel_id=CHANNEL_ID, guild_id=GUILD_ID
    )
    llm.reply("It now starts on Friday morning.")
    record = fake.ask(target, user=ANN, guild_id=GUILD_ID)
    await fake.wait_answered(record)
    await gw.settle()
    assert [c["type"] for c in record.callbacks] == [5]  # "chorus is thinking…" at once
    assert not int((record.callbacks[0].get("data") or {}).get("flags") or 0) & 64  # public
    assert record.text == "It now starts on Friday morning."
    assert fake.posted_in(CHANNEL_ID) == []  # not a second message in the channel
    [request] = llm.requests
    users = [str(m["content"]) for m in request["messages"] if m["role"] == "user"]
    assert "The meeting moved to Friday at 10." in users[-1]
    assert "Bob" in users[-1]  # whose words they are
    assert "What can you tell me about this message?" in users[-1]
    sessions = gw.stack.runner.sessions.sessions
    assert [str(s.user_key) for s in sessions] == [f"discord:{ANN_ID}"]  # the asker's session


async def test_an_ask_in_a_dm_and_in_a_thread_is_answered_there(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    fake, llm = gw.discord, gw.server
    await fake.wait_for(lambda: bool(fake.command_names()), what="the commands sync")
    mine = fake.message("remind me: call the plumber", author=ANN, channel_id=DM_ANN)
    llm.reply("Noted: the plumber.")
    await fake.wait_posted(DM_ANN, 1)  # the typed message itself is answered
    await gw.settle()
    llm.reply("You wanted to call the plumber.")
    record = fake.ask(mine, user=ANN)
    await fake.wait_answered(record)
    assert record.text == "You wanted to call the plumber."
    assert len(fake.posted_in(DM_ANN)) == 1
    in_thread = fake.message(
        "ship it tonight?", author=BOB, channel_id=THREAD_ID, guild_id=GUILD_ID
    )
    llm.reply("Bob asks whether to ship tonight.")
    asked = fake.ask(in_thread, user=ANN, guild_id=GUILD_ID)
    await fake.wait_answered(asked)
    await gw.settle()
    assert asked.text == "Bob asks whether to ship tonight."
    assert fake.posted_in(THREAD_ID) == []
    # having answered in the thread, the bot follows it (discord.follow_threads)
    llm.reply("Following now.")
    fake.message("so?", author=ANN, channel_id=THREAD_ID, guild_id=GUILD_ID)
    [followed] = await fake.wait_posted(THREAD_ID, 1)
    assert followed.content == "Following now."


async def test_a_message_without_text_gets_a_private_note_and_no_turn(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    fake, llm = gw.discord, gw.server
    await fake.wait_for(lambda: bool(fake.command_names()), what="the commands sync")
    picture = fake.add_file(b"\x89PNG....", name="cat.png")
    target = fake.message(
        "", author=BOB, channel_id=CHANNEL_ID, guild_id=GUILD_ID, attachments=[picture]
    )
    record = fake.ask(target, user=ANN, guild_id=GUILD_ID)
    await fake.wait_answered(record)
    await gw.settle()
    assert record.ephemeral and "no text" in record.text
    assert llm.requests == [] and fake.posted == []

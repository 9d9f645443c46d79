"""Groups, forum topics and commands, against the fake Bot API."""

from __future__ import annotations

import asyncio
import json

from tests.fakes.telegram_api import BotMessage
from tests.telegram.conftest import ADMIN, ANN, BOB, FORUM, GROUP, GatewayFactory, user_texts


async def test_group_gating_mention_reply_and_command(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    tg, llm = gw.telegram, gw.server
    tg.message("just chatting among ourselves", user_id=ANN, chat_id=GROUP)
    tg.message("/new@some_other_bot", user_id=ANN, chat_id=GROUP)
    asked = tg.message("@chorus_test_bot what is 2+2?", user_id=ANN, chat_id=GROUP)
    llm.reply("4")
    [answer] = await tg.wait_messages(GROUP, 1)
    assert answer.text == "4"
    assert answer.reply_to == asked["message"]["message_id"]  # quotes the question
    assert user_texts(llm.requests[0]) == ["what is 2+2?"]

    llm.reply("8")
    tg.message("and doubled?", user_id=ANN, chat_id=GROUP, reply_to=answer)
    messages = await tg.wait_messages(GROUP, 2)
    assert messages[1].text == "8"

    command = tg.message("/new@chorus_test_bot", user_id=ANN, chat_id=GROUP)
    messages = await tg.wait_messages(GROUP, 3)
    assert messages[2].text.startswith("Started a new session")
    assert messages[2].reply_to == command["message"]["message_id"]
    await gw.settle()
    await asyncio.to_thread(gw.stack.background.queue.flush, 30)
    # the chatter and the other bot's command were ignored: two turns, then /new's
    # handoff summary of those two turns (a background job)
    turns = [user_texts(r) for r in llm.requests[:2]]
    assert turns == [["what is 2+2?"], ["what is 2+2?", "and doubled?"]]
    assert len(llm.requests) == 3
    assert "CONVERSATION:" in llm.requests[2]["messages"][-1]["content"]
    assert len(tg.in_chat(GROUP)) == 3


async def test_forum_topic_replies_stay_in_the_topic(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    tg, llm = gw.telegram, gw.server
    llm.reply("Answer in topic 42.")
    tg.message("@chorus_test_bot hello", user_id=ANN, chat_id=FORUM, forum=True, thread_id=42)
    [answer] = await tg.wait_messages(FORUM, 1)
    assert answer.thread_id == 42
    typing = tg.calls_of("sendChatAction")
    assert typing and all(int(c.params["message_thread_id"]) == 42 for c in typing)

    # in a topic every message replies to the topic's first message: that is no reply to us
    root = {
        "message_id": 42,
        "date": 0,
        "chat": {"id": FORUM, "type": "supergroup"},
        "from": {"id": tg.bot_id, "is_bot": True, "first_name": "Chorus"},
        "forum_topic_created": {"name": "t", "icon_color": 1},
    }
    tg.message(
        "chatter in the topic", user_id=BOB, chat_id=FORUM, forum=True, thread_id=42, reply_to=root
    )
    tg.message("/status@chorus_test_bot", user_id=ANN, chat_id=FORUM, forum=True, thread_id=7)
    messages = await tg.wait_messages(FORUM, 2)
    assert messages[1].thread_id == 7
    await gw.settle()
    assert len(llm.requests) == 1


async def test_two_users_in_one_group_have_their_own_sessions_and_profiles(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    tg, llm = gw.telegram, gw.server
    llm.tool_call("memory", {"action": "add", "target": "user", "content": "Ann drinks green tea"})
    llm.reply("Noted, Ann.")
    tg.message("@chorus_test_bot remember: I drink green tea", user_id=ANN, chat_id=GROUP)
    await tg.wait_messages(GROUP, 1)
    await gw.settle()

    llm.reply("Hi Bob.")
    tg.message("@chorus_test_bot what do I drink?", user_id=BOB, chat_id=GROUP)
    await tg.wait_messages(GROUP, 2)
    bob_request = llm.requests[-1]
    assert "green tea" not in json.dumps(bob_request)
    assert user_texts(bob_request) == ["what do I drink?"]

    llm.reply("Green tea.")
    tg.message("@chorus_test_bot and what do I drink?", user_id=ANN, chat_id=GROUP)
    await tg.wait_messages(GROUP, 3)
    ann_request = llm.requests[-1]
    assert user_texts(ann_request)[-2:] == [
        "remember: I drink green tea",
        "and what do I drink?",
    ]
    keys = {str(live.user_key) for live in gw.runner.sessions.sessions}
    assert keys == {f"telegram:{ANN}", f"telegram:{BOB}"}
    profiles = gw.stack.settings.home / "memories" / "users" / "telegram"
    assert "green tea" in (profiles / str(ANN) / "USER.md").read_text()
    assert not (profiles / str(BOB) / "USER.md").exists()


async def test_commands_are_published_admin_ones_only_to_admins(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    tg = gw.telegram
    everyone = {c["command"] for c in tg.commands["all_private_chats"]}
    admins = {c["command"] for c in tg.commands[f"chat:{ADMIN}"]}
    assert {"help", "new", "status", "stop"} <= everyone
    assert "admin" not in everyone
    assert "admin" in admins and everyone < admins
    assert all(c["description"] for c in tg.commands["all_private_chats"])

    tg.message("/help", user_id=ANN)
    [reply] = await tg.wait_messages(ANN, 1)
    assert "/new" in reply.text and "/admin" not in reply.text
    await gw.settle()
    assert not gw.server.requests


async def test_every_command_works_with_and_without_the_bot_name(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    tg = gw.telegram
    tg.message("/whoami", user_id=ANN)
    tg.message("/whoami@chorus_test_bot", user_id=ANN)
    tg.message("/WHOAMI@Chorus_Test_Bot", user_id=ANN)
    replies: list[BotMessage] = await tg.wait_messages(ANN, 3)
    assert all(r.text.startswith(f"You are telegram:{ANN}") for r in replies)


async def test_group_chatter_that_starts_with_a_slash_is_not_a_command(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    tg = gw.telegram
    tg.message("/tmp is full again on the build box", user_id=ANN, chat_id=GROUP)
    tg.message("/etc/hosts has the old address", user_id=BOB, chat_id=GROUP)
    tg.message("/help", user_id=ANN, chat_id=GROUP)  # a command the bot has
    tg.message("/frobnicate@chorus_test_bot", user_id=ANN, chat_id=GROUP)  # addressed to it
    messages = await tg.wait_messages(GROUP, 2)
    assert messages[0].text.startswith("Commands:")
    assert messages[1].text.startswith("Unknown command /frobnicate")
    tg.message("/frobnicate", user_id=ANN)  # in a direct message every command is addressed
    [unknown] = await tg.wait_messages(ANN, 1)
    assert unknown.text.startswith("Unknown command /frobnicate")
    await gw.settle()
    assert len(tg.in_chat(GROUP)) == 2
    assert not gw.server.requests


async def test_without_required_mentions_slash_chatter_is_an_ordinary_message(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(CHORUS_GATEWAY__GROUP_REQUIRE_MENTION="false")
    tg, llm = gw.telegram, gw.server
    llm.reply("Time to clean it up.")
    tg.message("/tmp is full again on the build box", user_id=ANN, chat_id=GROUP)
    [answer] = await tg.wait_messages(GROUP, 1)
    assert answer.text == "Time to clean it up."
    assert user_texts(llm.requests[0]) == ["/tmp is full again on the build box"]

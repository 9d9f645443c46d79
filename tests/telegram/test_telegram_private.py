"""Answers for one person, typed in a group, go to their private chat with the bot."""

from __future__ import annotations

from gateway import _texts as t
from tests.telegram.conftest import ADMIN, ANN, BOB, GROUP, GatewayFactory

LINK = "https://t.me/chorus_test_bot?start=private"


async def test_memory_and_admin_users_in_a_group_arrive_in_private_chats(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    tg, llm = gw.telegram, gw.server
    llm.tool_call("memory", {"action": "add", "target": "user", "content": "Ann drinks green tea"})
    llm.reply("Noted, Ann.")
    tg.message("remember: I drink green tea", user_id=ANN)
    await tg.wait_messages(ANN, 1)
    tg.message("/start", user_id=ADMIN)
    await tg.wait_messages(ADMIN, 1)

    asked = tg.message("/memory", user_id=ANN, chat_id=GROUP)
    tg.message("/admin users", user_id=ADMIN, chat_id=GROUP)
    notes = await tg.wait_messages(GROUP, 2)
    profile = (await tg.wait_messages(ANN, 2))[1]
    users = (await tg.wait_messages(ADMIN, 2))[1]
    assert "Ann drinks green tea" in profile.text
    assert f"telegram:{BOB}" in users.text  # the allow list
    assert [n.text for n in notes] == [t.SENT_PRIVATELY] * 2
    assert notes[0].reply_to == asked["message"]["message_id"]
    await gw.settle()
    group = " ".join(m.text for m in tg.in_chat(GROUP))
    assert "green tea" not in group and f"telegram:{BOB}" not in group


async def test_someone_who_never_started_the_bot_gets_a_deep_link_and_nothing_leaks(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    tg = gw.telegram
    tg.message("/admin users", user_id=ADMIN, chat_id=GROUP)
    [note] = await tg.wait_messages(GROUP, 1)
    assert f"telegram:{ANN}" not in note.text
    assert LINK in note.text and "start a chat" in note.text
    refused = tg.calls_of("sendMessage", status=403)
    assert [int(c.params["chat_id"]) for c in refused] == [ADMIN]
    assert tg.in_chat(ADMIN) == []

    # the link opens the private chat (``/start private``); asked again, the answer is there
    tg.message("/start private", user_id=ADMIN)
    [greeting] = await tg.wait_messages(ADMIN, 1)
    assert greeting.text.startswith("Hi!")
    tg.message("/admin users", user_id=ADMIN, chat_id=GROUP)
    users = (await tg.wait_messages(ADMIN, 2))[1]
    assert f"telegram:{ANN}" in users.text
    second = (await tg.wait_messages(GROUP, 2))[1]
    assert second.text == t.SENT_PRIVATELY

"""Answers for one person, typed in a group, go to that person alone."""

from __future__ import annotations

from gateway import _texts as t
from gateway.commands import _texts as ct
from tests.runner.conftest import GatewayFactory

GROUP = "group-7"


async def test_a_profile_and_the_access_list_asked_in_a_group_go_to_the_asker_alone(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    gw.server.tool_call("memory", {"action": "add", "target": "user", "content": "Likes jazz"})
    gw.server.reply("noted")
    await gw.ask("I like jazz", user="2")

    await gw.say("/memory", user="2", chat_id=GROUP, is_direct=False)
    await gw.say("/admin users", user="1", chat_id=GROUP, is_direct=False)
    await gw.say("/whoami", user="3", chat_id=GROUP, is_direct=False)
    group = gw.adapter.texts(GROUP)
    assert not any("Likes jazz" in text or "testchat:3" in text for text in group)
    assert group == [t.SENT_PRIVATELY] * 3
    assert all(d.reply_to for d in gw.adapter.sent if d.chat_id == GROUP)
    [profile] = gw.adapter.texts("dm-2")[-1:]
    assert "Likes jazz" in profile
    [users] = gw.adapter.texts("dm-1")
    assert "testchat:3" in users  # the allow list
    assert "testchat:3" in gw.adapter.texts("dm-3")[0]

    # what anyone may see stays in the group
    await gw.say("/help", user="2", chat_id=GROUP, is_direct=False)
    assert gw.adapter.texts(GROUP)[-1].startswith("Commands:")
    # and in a direct chat a private answer is simply the answer
    await gw.say("/whoami", user="2")
    assert gw.adapter.texts("dm-2")[-1].startswith("You are testchat:2")


async def test_status_and_forget_typed_in_a_group_answer_the_asker_alone(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    gw.server.tool_call("memory", {"action": "add", "target": "user", "content": "Likes jazz"})
    gw.server.reply("noted")
    await gw.ask("I like jazz", user="2")
    before = len(gw.adapter.texts("dm-2"))

    await gw.say("/status", user="2", chat_id=GROUP, is_direct=False)
    await gw.say("/forget jazz", user="2", chat_id=GROUP, is_direct=False)
    assert gw.adapter.texts(GROUP) == [t.SENT_PRIVATELY] * 2
    status, forgot = gw.adapter.texts("dm-2")[before:]
    assert status.startswith(ct.STATUS_YOU.format(user_key="testchat:2", admin=""))
    assert forgot == ct.FORGOT_ONE


async def test_someone_the_bot_cannot_write_to_is_told_how_and_the_group_sees_nothing(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    gw.adapter.unreachable.add("1")
    await gw.say("/admin users", user="1", chat_id=GROUP, is_direct=False)
    assert not any("testchat:2" in text for text in gw.adapter.texts())
    assert gw.adapter.texts(GROUP) == [t.NO_PRIVATE_CHAT]
    assert gw.adapter.texts("dm-1") == []

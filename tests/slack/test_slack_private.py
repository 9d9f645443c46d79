"""Answers for one person, typed in a channel, are ephemeral: only they see them."""

from __future__ import annotations

from gateway import _texts as t
from tests.fakes.slack_requests import BOT_USER_ID
from tests.slack.conftest import ADMIN, ANN, BOB, CHANNEL, DM_ANN, GatewayFactory

MENTION = f"<@{BOT_USER_ID}>"


async def test_memory_and_admin_users_in_a_channel_are_shown_to_the_asker_alone(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    slack, llm = gw.slack, gw.server
    llm.tool_call("memory", {"action": "add", "target": "user", "content": "Ann drinks green tea"})
    llm.reply("Noted, Ann.")
    await gw.event(slack.person("remember: I drink green tea", user=ANN, channel=DM_ANN))
    await slack.wait_posted(DM_ANN, 1)

    await gw.event(slack.person("/memory", user=ANN, channel=CHANNEL, channel_type="channel"))
    llm.reply("Hello!")
    root = slack.person(f"{MENTION} hi", user=BOB, channel=CHANNEL, channel_type="channel")
    await gw.event({**root, "type": "app_mention"})
    [hello] = await slack.wait_posted(CHANNEL, 1)
    asked = slack.person(
        "/admin users", user=ADMIN, channel=CHANNEL, channel_type="channel", thread_ts=root["ts"]
    )
    await gw.event(asked)
    await slack.wait_for(lambda: len(slack.ephemeral) >= 2, 15, "ephemeral messages")
    profile, users = slack.ephemeral
    assert (profile.channel, profile.user, profile.thread_ts) == (CHANNEL, ANN, None)
    assert "Ann drinks green tea" in profile.text
    assert (users.channel, users.user, users.thread_ts) == (CHANNEL, ADMIN, root["ts"])
    assert f"slack:{BOB}" in users.text
    await gw.settle()
    assert slack.posted_in(CHANNEL) == [hello]  # nothing for the whole channel, not even a note


async def test_someone_slack_will_not_show_it_to_is_told_and_nothing_leaks(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    slack = gw.slack
    slack.away.add((CHANNEL, ADMIN))
    await gw.event(
        slack.person("/admin users", user=ADMIN, channel=CHANNEL, channel_type="channel")
    )
    [note] = await slack.wait_posted(CHANNEL, 1)
    assert f"slack:{ANN}" not in note.text
    assert note.text == t.NO_PRIVATE_CHAT
    assert slack.calls_of("chat.postEphemeral", status=None)
    assert slack.ephemeral == []

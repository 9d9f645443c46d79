"""Names, threads the bot is in, images, and typed commands where Slack lets them through."""

from __future__ import annotations

import base64

from tests.fakes.slack_requests import BOT_USER_ID
from tests.slack.conftest import ADMIN, ANN, BOB, CHANNEL, DM_ANN, GatewayFactory, user_texts

MENTION = f"<@{BOT_USER_ID}>"


async def test_names_come_from_users_info_once(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    slack = gw.slack
    slack.add_user(ANN, "Ann Example")
    gw.server.reply("hi")
    await gw.event(slack.person("hello", user=ANN, channel=DM_ANN))
    await slack.wait_posted(DM_ANN, 1)
    await gw.event(slack.person("/whoami", user=ANN, channel=DM_ANN))
    posted = await slack.wait_posted(DM_ANN, 2)
    assert f"slack:{ANN} (Ann Example)" in posted[1].text
    assert len(slack.calls_of("users.info")) == 1


async def test_a_cold_thread_quotes_its_history_with_names(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    slack = gw.slack
    slack.add_user(BOB, "Bob Builder")
    root = slack.person("the deploy failed", user=BOB, channel=CHANNEL, channel_type="channel")
    thread = root["ts"]
    slack.person(
        "logs say disk full", user=BOB, channel=CHANNEL, channel_type="channel", thread_ts=thread
    )
    gw.server.reply("Free some disk.")
    ask = slack.person(
        f"{MENTION} what now?", user=ANN, channel=CHANNEL, channel_type="channel", thread_ts=thread
    )
    await gw.event(ask)
    await slack.wait_posted(CHANNEL, 1)
    [text] = user_texts(gw.server.requests[0])
    assert (
        "> Bob Builder: the deploy failed" in text and "> Bob Builder: logs say disk full" in text
    )
    assert text.endswith("what now?") and "UBOB0001" not in text


async def test_a_reply_in_a_thread_the_bot_answered_needs_no_mention(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    slack = gw.slack
    gw.server.reply("Paris.")
    gw.server.reply("About 2.1 million.")
    root = slack.person(
        f"{MENTION} capital of France?", user=ANN, channel=CHANNEL, channel_type="channel"
    )
    await gw.event(root)
    await slack.wait_posted(CHANNEL, 1)
    follow = slack.person(
        "and its population?",
        user=ANN,
        channel=CHANNEL,
        channel_type="channel",
        thread_ts=root["ts"],
    )
    await gw.event(follow)
    posted = await slack.wait_posted(CHANNEL, 2)
    assert posted[1].text == "About 2.1 million." and posted[1].thread_ts == root["ts"]
    assert user_texts(gw.server.requests[-1])[-2:] == ["capital of France?", "and its population?"]

    other = slack.person("unrelated chat", user=BOB, channel=CHANNEL, channel_type="channel")
    elsewhere = slack.person(
        "a reply in a thread without the bot",
        user=BOB,
        channel=CHANNEL,
        channel_type="channel",
        thread_ts=other["ts"],
    )
    await gw.event(elsewhere)
    await gw.settle()
    assert len(gw.server.requests) == 2 and len(slack.posted_in(CHANNEL)) == 2


async def test_after_a_restart_the_bots_threads_are_known_from_their_history(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    slack = gw.slack
    gw.server.reply("Paris.")
    root = slack.person(f"{MENTION} capital?", user=ANN, channel=CHANNEL, channel_type="channel")
    await gw.event(root)
    await slack.wait_posted(CHANNEL, 1)
    await gw.close()

    again = await make_gateway()
    gw.server.reply("Yes, the Seine.")
    thread = root["ts"]
    follow = slack.person(
        "does it have a river?", user=ANN, channel=CHANNEL, channel_type="channel", thread_ts=thread
    )
    await again.event(follow)
    posted = await slack.wait_posted(CHANNEL, 2)
    assert posted[1].text == "Yes, the Seine."
    again.server.reply("It is the Seine.")
    more = slack.person("more", user=ANN, channel=CHANNEL, channel_type="channel", thread_ts=thread)
    await again.event(more)
    await slack.wait_posted(CHANNEL, 3)
    assert len(slack.calls_of("conversations.replies")) == 1  # the thread's history read once


async def test_a_shared_image_reaches_a_vision_model(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway(vision=True, CHORUS_LLM__VISION="true")
    slack = gw.slack
    picture = b"\x89PNG\r\n fake png bytes"
    file = slack.add_file(picture, mimetype="image/png", name="cat.png")
    gw.server.reply("A cat.")
    event = slack.person(
        "what is this?", user=ANN, channel=DM_ANN, subtype="file_share", files=[file]
    )
    await gw.event(event)
    [answer] = await slack.wait_posted(DM_ANN, 1)
    assert answer.text == "A cat."
    content = gw.server.requests[0]["messages"][-1]["content"]
    assert content[0]["type"] == "text" and "what is this?" in content[0]["text"]
    expected = "data:image/png;base64," + base64.b64encode(picture).decode()
    assert content[1] == {"type": "image_url", "image_url": {"url": expected}}
    assert slack.downloads == [(file["id"], f"Bearer {slack.token}")]


async def test_images_are_never_fetched_outside_slack_or_beyond_the_cap(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(vision=True, CHORUS_LLM__VISION="true")
    slack = gw.slack
    stolen = {
        "id": "FEVIL001",
        "mimetype": "image/png",
        "size": 10,
        "url_private_download": "http://198.51.100.7/steal-the-token.png",
    }
    huge = {**slack.add_file(b"x" * 10, mimetype="image/png"), "size": 50_000_000}
    gw.server.reply("I see no picture.")
    event = slack.person(
        "look", user=ANN, channel=DM_ANN, subtype="file_share", files=[stolen, huge]
    )
    await gw.event(event)
    posted = await slack.wait_posted(DM_ANN, 2)  # the "answering your text only" note first
    assert posted[-1].text == "I see no picture."
    assert slack.downloads == []
    assert isinstance(gw.server.requests[0]["messages"][-1]["content"], str)


async def test_typed_commands_work_with_a_mention_or_a_leading_space(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    slack = gw.slack
    await gw.event(
        slack.person(f"{MENTION} /whoami", user=ADMIN, channel=CHANNEL, channel_type="channel")
    )
    await slack.wait_for(lambda: bool(slack.ephemeral), what="the answer, for the admin alone")
    [mentioned] = slack.ephemeral
    assert f"slack:{ADMIN}" in mentioned.text and "an admin" in mentioned.text
    await gw.event(slack.person(" /whoami", user=ANN, channel=DM_ANN))
    [spaced] = await slack.wait_posted(DM_ANN, 1)
    assert f"slack:{ANN}" in spaced.text
    assert gw.server.requests == []

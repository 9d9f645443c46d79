"""Slack takes no slash command typed in a thread, so ``@chorus /chorus new``,
``@chorus /new`` and ``@chorus new`` typed there are that thread's commands."""

from __future__ import annotations

from tests.fakes.slack_requests import BOT_USER_ID
from tests.slack.conftest import ANN, CHANNEL, GatewayFactory, user_texts
from tests.waiting import until

KIND = {"channel": CHANNEL, "channel_type": "channel"}
MENTION = f"<@{BOT_USER_ID}>"


async def test_commands_typed_in_a_thread_act_on_that_threads_session(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    slack = gw.slack
    gw.server.reply("I will remember the blue door.")
    start = slack.person(f"{MENTION} remember the blue door", user=ANN, **KIND)
    await gw.event(start)
    await slack.wait_posted(CHANNEL, 1)
    thread = start["ts"]
    await gw.settle()

    await gw.event(slack.person(f"{MENTION} /chorus status", user=ANN, thread_ts=thread, **KIND))
    await until(lambda: slack.ephemeral, what="the status, to Ann alone")
    [status] = slack.ephemeral
    assert status.user == ANN and status.thread_ts == thread
    assert "1 turn" in status.text  # the thread's session, not one of the channel

    await gw.event(slack.person(f"{MENTION} new", user=ANN, thread_ts=thread, **KIND))
    posted = await slack.wait_posted(CHANNEL, 2)
    assert posted[-1].thread_ts == thread and "Started a new session" in posted[-1].text

    await gw.event(slack.person(f"{MENTION} /new", user=ANN, thread_ts=thread, **KIND))
    posted = await slack.wait_posted(CHANNEL, 3)
    assert "already a fresh session" in posted[-1].text
    await gw.settle()
    said = [text for request in gw.server.requests for text in user_texts(request)]
    commands = {"/chorus status", "/status", "new", "/new"}
    assert not [text for text in said if text.strip() in commands]  # no command reached it

    # a sentence that starts with a command's name, or a name without a mention: messages
    gw.server.responder(lambda _: "from the model")
    await gw.event(slack.person(f"{MENTION} new ideas for lunch?", user=ANN, **KIND))
    await gw.event(slack.person("status", user=ANN, thread_ts=thread, **KIND))
    posted = await slack.wait_posted(CHANNEL, 5)
    assert [p.text for p in posted[-2:]] == ["from the model"] * 2

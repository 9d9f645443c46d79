"""Replies on their way out, cold threads, and start-up against a rate-limited Slack."""

from __future__ import annotations

import itertools
import logging

import pytest

from agent.others import QUOTED_END, QUOTED_MARK
from gateway import logs
from memory import log_content
from tests.fakes.slack_api import TOKEN, FakeSlack
from tests.fakes.slack_requests import BOT_USER_ID, SIGNING_SECRET, event_callback, post_event
from tests.slack.conftest import ANN, BOB, CHANNEL, DM_ANN, GatewayFactory, user_texts


async def test_rate_limited_posts_arrive_once_each_in_order(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    slack, llm = gw.slack, gw.server
    words = [f"word{n:04d}" for n in range(1500)]  # about 13,500 characters: four parts
    llm.reply(" ".join(words))
    slack.rate_limit("chat.postMessage", 3, retry_after=0)
    await gw.event(slack.person("tell me everything", user=ANN, channel=DM_ANN))
    await slack.wait_for(
        lambda: " ".join(p.text for p in slack.posted_in(DM_ANN)).split() == words,
        timeout=20,
        what="every part",
    )
    posted = slack.posted_in(DM_ANN)
    assert len(posted) == 4
    assert all(len(p.text) <= 3500 for p in posted)
    assert len(slack.calls_of("chat.postMessage", status=429)) == 3
    await gw.settle()
    assert len(slack.posted_in(DM_ANN)) == 4


async def test_a_streamed_answer_is_edited_at_most_once_a_second(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    slack, llm = gw.slack, gw.server
    answer = " ".join(f"w{n}" for n in range(30))
    llm.stream_piece_delay = 0.06
    llm.reply(answer)
    await gw.event(slack.person("stream please", user=ANN, channel=DM_ANN))
    await slack.wait_for(lambda: [p.text for p in slack.posted_in(DM_ANN)] == [answer])
    [message] = slack.posted_in(DM_ANN)
    assert len(message.history) >= 2, "the answer was not streamed"
    times = [c.at for c in slack.calls if c.method in ("chat.postMessage", "chat.update")]
    assert all(b - a >= 0.95 for a, b in itertools.pairwise(times))


async def test_a_cold_thread_brings_its_earlier_messages(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    slack, llm = gw.slack, gw.server
    kind = {"channel": CHANNEL, "channel_type": "channel"}
    root = slack.person("Shall we ship on Friday?", user=BOB, **kind)
    slack.person("I'd say Monday & <not> Friday", user=ANN, thread_ts=root["ts"], **kind)
    llm.reply("Monday sounds safer.")
    ask = slack.person(
        f"<@{BOT_USER_ID}> what do you think?", user=ANN, thread_ts=root["ts"], **kind
    )
    await gw.event(ask)
    [reply] = await slack.wait_posted(CHANNEL, 1)
    assert reply.thread_ts == root["ts"]
    assert user_texts(llm.requests[-1])[-1] == (
        f"Earlier in this thread {QUOTED_MARK}:\n"
        f"> {BOB}: Shall we ship on Friday?\n"
        f"> {ANN}: I'd say Monday & <not> Friday\n"
        f"{QUOTED_END}\n"
        "\n"
        "what do you think?"
    )
    llm.reply("Yes.")
    again = slack.person(f"<@{BOT_USER_ID}> sure?", user=ANN, thread_ts=root["ts"], **kind)
    await gw.event(again)
    await slack.wait_posted(CHANNEL, 2)
    assert user_texts(llm.requests[-1])[-1] == "sure?"
    assert len(slack.calls_of("conversations.replies")) == 1


async def test_start_up_survives_429_and_errors(
    make_gateway: GatewayFactory, slack: FakeSlack
) -> None:
    slack.rate_limit("auth.test", 2, retry_after=0)
    slack.fail("auth.test", 3, status=500)
    gw = await make_gateway(start_wait=0.0)
    assert not gw.adapter.is_connected()
    event = slack.person("anyone there?", user=ANN, channel=DM_ANN)
    assert (await gw.event(event))[0] == 503  # Slack will send it again
    await slack.wait_for(gw.adapter.is_connected, timeout=10, what="connected")
    assert len(slack.calls_of("auth.test", status=None)) == 6
    gw.server.reply("Here now.")
    assert (await gw.event(event, retry_num=1))[0] == 200
    [reply] = await slack.wait_posted(DM_ANN, 1)
    assert reply.text == "Here now."


async def test_no_token_or_signing_secret_in_debug_logs(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    log_content.enable(True)  # the SDK's own DEBUG lines, which print whole requests, too
    try:
        gw = await make_gateway()
        slack, llm = gw.slack, gw.server
        llm.reply("Logged?")
        await gw.event(slack.person("hello", user=ANN, channel=DM_ANN))
        await slack.wait_posted(DM_ANN, 1)
        bad = event_callback(slack.person("x", user=ANN, channel=DM_ANN))
        await post_event(gw.events_url, bad, secret="wrong-secret")
        await gw.settle()
    finally:
        log_content.enable(False)
        logs.hold_library_loggers(False)
    assert "chat.postMessage" in caplog.text  # the SDK did log at DEBUG
    assert TOKEN not in caplog.text
    assert SIGNING_SECRET not in caplog.text

"""Events API requests end to end: verification, DMs, channels, threads and retries."""

from __future__ import annotations

import json
import logging
import time

import aiohttp
import pytest

from gateway import logs
from memory import log_content
from tests.fakes.slack_requests import BOT_USER_ID, event_callback, post_event
from tests.slack.conftest import ANN, BOB, CHANNEL, DM_ANN, GatewayFactory, user_texts


async def test_url_verification_answers_the_challenge(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    payload = {"token": "x", "challenge": "c-123", "type": "url_verification"}
    status, body = await post_event(gw.events_url, payload)
    assert status == 200
    assert json.loads(body) == {"challenge": "c-123"}


async def test_a_bad_signature_is_refused_and_nothing_is_answered(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    event = gw.slack.person("hi", user=ANN, channel=DM_ANN)
    status, _ = await post_event(gw.events_url, event_callback(event), secret="not-the-secret")
    assert status == 401
    await gw.settle()
    assert gw.server.requests == [] and gw.slack.calls_of("chat.postMessage") == []


@pytest.mark.parametrize("timestamp", ["soon", "", "١٢٣", "12.5", "-1e9"])
async def test_a_malformed_timestamp_is_refused_like_a_bad_signature(
    make_gateway: GatewayFactory, timestamp: str
) -> None:
    gw = await make_gateway()
    event = gw.slack.person("hi", user=ANN, channel=DM_ANN)
    status, _ = await post_event(gw.events_url, event_callback(event), timestamp=timestamp)
    assert status == 401
    await gw.settle()
    assert gw.server.requests == []


async def test_a_rightly_signed_but_stale_request_is_refused(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    event = gw.slack.person("hi", user=ANN, channel=DM_ANN)
    stale = str(int(time.time()) - 6 * 60)
    status, _ = await post_event(gw.events_url, event_callback(event), timestamp=stale)
    assert status == 401
    await gw.settle()
    assert gw.server.requests == []


async def test_a_bad_signature_never_puts_the_body_in_the_log(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    gw = await make_gateway()
    event = gw.slack.person("my bank pin is 4711", user=ANN, channel=DM_ANN)
    status, _ = await post_event(gw.events_url, event_callback(event), secret="wrong")
    assert status == 401
    assert "4711" not in caplog.text
    assert "refused a request without a valid signature" in caplog.text


async def test_dm_conversation(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    slack, llm = gw.slack, gw.server
    llm.reply("Hello Ann! **How** can I help? See [docs](https://x.io/?a=1&b=2)")
    status, _ = await gw.event(slack.person("hi there", user=ANN, channel=DM_ANN))
    assert status == 200
    [first] = await slack.wait_posted(DM_ANN, 1)
    assert first.text == "Hello Ann! *How* can I help? See <https://x.io/?a=1&amp;b=2|docs>"
    assert first.thread_ts is None

    llm.reply("You said hi.")
    await gw.event(slack.person("what did I say?", user=ANN, channel=DM_ANN))
    posted = await slack.wait_posted(DM_ANN, 2)
    assert posted[1].text == "You said hi."
    assert user_texts(llm.requests[-1])[-2:] == ["hi there", "what did I say?"]
    assert gw.adapter.is_connected()


async def test_channel_messages_need_a_mention_and_get_a_thread(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    slack, llm = gw.slack, gw.server
    await gw.event(slack.person("just chatting", user=ANN, channel=CHANNEL, channel_type="channel"))
    await gw.settle()
    assert llm.requests == [] and slack.posted_in(CHANNEL) == []

    llm.reply("At your service.")
    text = f"<@{BOT_USER_ID}> can you help?"
    message = slack.person(text, user=ANN, channel=CHANNEL, channel_type="channel")
    mention = {**message, "type": "app_mention"}
    mention.pop("channel_type")
    await gw.event(message)
    await gw.event(mention)  # Slack sends both for one message
    [reply] = await slack.wait_posted(CHANNEL, 1)
    assert reply.thread_ts == message["ts"]
    assert reply.text == "At your service."
    assert user_texts(llm.requests[-1])[-1] == "can you help?"
    await gw.settle()
    assert len(llm.requests) == 1 and len(slack.posted_in(CHANNEL)) == 1


async def test_threads_stay_threads_and_are_separate_sessions(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    slack, llm = gw.slack, gw.server
    mention = f"<@{BOT_USER_ID}>"
    roots = []
    for topic in ("apples", "pears"):
        llm.reply(f"About {topic}.")
        root = slack.person(f"{mention} {topic}", user=ANN, channel=CHANNEL, channel_type="channel")
        roots.append(root)
        await gw.event(root)
        await slack.wait_for(lambda r=root: _replies(gw, r["ts"]) == 1, what="first answer")

    llm.reply("Still apples.")
    follow = slack.person(
        f"{mention} more",
        user=ANN,
        channel=CHANNEL,
        channel_type="channel",
        thread_ts=roots[0]["ts"],
    )
    await gw.event(follow)
    await slack.wait_for(lambda: _replies(gw, roots[0]["ts"]) == 2, what="thread reply")
    texts = user_texts(llm.requests[-1])
    assert texts == ["apples", "more"], "the apples thread has its own history"
    assert _replies(gw, roots[1]["ts"]) == 1
    await gw.settle()
    keys = {str(live.key) for live in gw.runner.sessions.sessions}
    assert keys == {f"slack/{CHANNEL}/{ANN}/{r['ts']}" for r in roots}


def _replies(gw: object, thread_ts: str) -> int:
    return sum(1 for p in gw.slack.posted_in(CHANNEL) if p.thread_ts == thread_ts)  # type: ignore[attr-defined]


async def test_a_retried_event_gets_one_reply(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    slack, llm = gw.slack, gw.server
    llm.reply("Only once.")
    event = slack.person("hello", user=BOB, channel="DBOB0001")
    assert (await gw.event(event, event_id="Ev0RETRY"))[0] == 200
    assert (await gw.event(event, event_id="Ev0RETRY", retry_num=1))[0] == 200
    assert (await gw.event(event, event_id="Ev0RETRY", retry_num=2))[0] == 200
    await slack.wait_posted("DBOB0001", 1)
    await gw.settle()
    assert len(slack.posted_in("DBOB0001")) == 1 and len(llm.requests) == 1


async def test_bot_messages_and_edits_are_ignored(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    slack, llm = gw.slack, gw.server
    ours = slack.person("echo", user=BOT_USER_ID, channel=DM_ANN)
    other_bot = slack.person("beep", user=ANN, channel=DM_ANN, bot_id="BOTHER01")
    edited = slack.person("x", user=ANN, channel=DM_ANN, subtype="message_changed")
    for event in (ours, other_bot, edited):
        assert (await gw.event(event))[0] == 200
    await gw.settle()
    assert llm.requests == [] and slack.calls_of("chat.postMessage") == []


async def test_events_during_shutdown_get_503_so_slack_sends_them_again(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    await gw.adapter.pause()
    event = gw.slack.person("hello?", user=ANN, channel=DM_ANN)
    status, _ = await post_event(gw.events_url, event_callback(event))
    assert status == 503
    await gw.settle()
    assert gw.server.requests == []


async def test_an_event_cut_by_a_crash_is_answered_once_after_the_restart(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    gw.server.reply("never delivered", delay=30)
    event = event_callback(gw.slack.person("what is 6 times 7?", user=ANN, channel=DM_ANN))
    status, _ = await post_event(gw.events_url, event)
    assert status == 200  # acknowledged: Slack will not send it again by itself
    await gw.slack.wait_for(lambda: gw.server.in_flight == 1, what="the answer in progress")
    await gw.crash()

    gw.server.reply("Forty-two.")
    again = await make_gateway()
    await again.slack.wait_for(lambda: again.slack.calls_of("chat.postMessage"), what="answer")
    status, _ = await post_event(again.events_url, event, retry_num=1)  # a late retry
    assert status == 200
    await again.settle()
    posted = [c.params["text"] for c in again.slack.calls_of("chat.postMessage")]
    assert posted == ["Forty-two."]


async def test_channel_chatter_that_starts_with_a_slash_is_not_a_command(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    slack = gw.slack
    for text in ("/tmp is full again on the build box", "/etc/hosts has the old address"):
        await gw.event(slack.person(text, user=ANN, channel=CHANNEL, channel_type="channel"))
    await gw.event(slack.person("/help", user=BOB, channel=CHANNEL, channel_type="channel"))
    [listing] = await slack.wait_posted(CHANNEL, 1)
    assert listing.text.startswith("Commands:")
    mention = f"<@{BOT_USER_ID}> /frobnicate"
    await gw.event(slack.person(mention, user=ANN, channel=CHANNEL, channel_type="channel"))
    posted = await slack.wait_posted(CHANNEL, 2)
    assert posted[1].text.startswith("Unknown command /frobnicate")
    await gw.event(slack.person("/frobnicate", user=ANN, channel=DM_ANN))
    [unknown] = await slack.wait_posted(DM_ANN, 1)
    assert unknown.text.startswith("Unknown command /frobnicate")
    await gw.settle()
    assert len(slack.posted_in(CHANNEL)) == 2
    assert gw.server.requests == []


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        (b"\xff\xfe\x00qx7zz", {"X-Slack-Request-Timestamp": "1700000000"}),
        (b"payload=%ZZ%ff", {"Content-Type": "application/x-www-form-urlencoded"}),
        (b"{not json", {"Content-Type": "application/json", "X-Slack-Signature": "v0=00"}),
        (b"\x80\x81" * 50, {}),
    ],
)
async def test_unsigned_junk_is_refused_without_a_traceback(
    make_gateway: GatewayFactory,
    caplog: pytest.LogCaptureFixture,
    body: bytes,
    headers: dict[str, str],
) -> None:
    caplog.set_level(logging.DEBUG)
    gw = await make_gateway()
    now = {"X-Slack-Request-Timestamp": str(int(time.time()))}
    for _ in range(20):
        async with (
            aiohttp.ClientSession() as session,
            session.post(gw.events_url, data=body, headers={**now, **headers}) as response,
        ):
            assert response.status == 401
            assert b"qx7zz" not in await response.read()
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert errors == []
    refused = [r for r in caplog.records if "without a valid signature" in r.getMessage()]
    assert len(refused) <= 1
    assert "qx7zz" not in caplog.text
    assert gw.server.requests == []


@pytest.mark.parametrize("content", [False, True])
async def test_sdk_debug_lines_carry_message_text_only_with_content_logging(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture, content: bool
) -> None:
    caplog.set_level(logging.DEBUG)
    logs.hold_library_loggers(True)  # released: the gateway's start decides
    log_content.enable(content)
    try:
        gw = await make_gateway()
        gw.server.reply("the answer is zebra-quartz-58")
        status, _ = await gw.event(
            gw.slack.person("my pin is mauve-otter-91", user=ANN, channel=DM_ANN)
        )
        assert status == 200
        await gw.slack.wait_posted(DM_ANN, 1)
        await gw.settle()
    finally:
        log_content.enable(False)
        logs.hold_library_loggers(False)
    sdk_debug = [r for r in caplog.records if r.name.startswith(("slack_sdk", "slack_bolt"))]
    if content:
        assert "zebra-quartz-58" in caplog.text  # the SDK's own DEBUG lines are back
        assert any(r.levelno == logging.DEBUG for r in sdk_debug)
    else:
        assert "mauve-otter-91" not in caplog.text and "zebra-quartz-58" not in caplog.text
        assert all(r.levelno >= logging.INFO for r in sdk_debug)

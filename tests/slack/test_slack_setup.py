"""Formatting, event mapping, ``chorus doctor`` and which adapters the service enables."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.adapters.slack import SPEC, SlackAdapter, SlackSettings
from gateway.adapters.slack._events import BotIdentity, inbound_from, thread_context
from gateway.adapters.slack._format import from_slack, to_mrkdwn
from gateway.app import enabled_adapters
from gateway.cli._doctor import platform_check
from gateway.errors import ConfigError
from gateway.events import Quoted
from tests.fakes import FakeOpenAI
from tests.fakes.slack_api import APP_TOKEN, BOT_USER_ID, TOKEN, FakeSlack
from tests.slack.conftest import slack_settings

check_slack = platform_check(SPEC)

ME = BotIdentity(BOT_USER_ID, "chorus", "BBOT0001", "TTEAM001")


@pytest.mark.parametrize(
    ("markdown", "mrkdwn"),
    [
        ("**bold** and __also__", "*bold* and *also*"),
        ("*italic* and _this_", "_italic_ and _this_"),
        ("~~gone~~", "~gone~"),
        ("use `a < b && c`", "use `a &lt; b &amp;&amp; c`"),
        ("```python\nif a < b:\n    **x**\n```", "```\nif a &lt; b:\n    **x**\n```"),
        ("[the docs](https://x.io/a?b=1)", "<https://x.io/a?b=1|the docs>"),
        ("[**big** link](https://x.io)", "<https://x.io|*big* link>"),
        ("1 < 2 & 3 > 2 <@U1> <!here>", "1 &lt; 2 &amp; 3 &gt; 2 &lt;@U1&gt; &lt;!here&gt;"),
        ("## Plan\n- one\n* two", "*Plan*\n• one\n• two"),
        ("2 * 3 * 4", "2 * 3 * 4"),
        ("snake_case_name", "snake_case_name"),
    ],
)
def test_markdown_to_mrkdwn(markdown: str, mrkdwn: str) -> None:
    assert to_mrkdwn(markdown) == mrkdwn


def test_slack_markup_to_plain_text() -> None:
    text = "<@U1> see <#C1|general>, <https://a.io|A> or <https://b.io> &lt;3 &amp; <!here>"
    assert from_slack(text) == "@U1 see #general, A (https://a.io) or https://b.io <3 & @here"


def test_events_become_messages() -> None:
    dm = {"type": "message", "channel_type": "im", "channel": "D1", "user": "U1", "ts": "5.1"}
    message = inbound_from({**dm, "text": "hi &amp; bye"}, ME)
    assert message is not None
    assert (message.chat_id, message.user_id, message.message_id) == ("D1", "U1", "5.1")
    assert message.text == "hi & bye" and message.is_direct and message.thread_id is None
    in_thread = inbound_from({**dm, "text": "x", "thread_ts": "4.0"}, ME)
    assert in_thread is not None and in_thread.thread_id == "4.0"

    channel = {**dm, "channel_type": "channel", "channel": "C1"}
    plain = inbound_from({**channel, "text": "hello all"}, ME)
    assert plain is not None and not plain.mentions_bot and plain.thread_id == "5.1"
    mention = inbound_from({**channel, "text": f"<@{BOT_USER_ID}> help me"}, ME)
    assert mention is not None and mention.mentions_bot and mention.text == "help me"
    app_mention = {k: v for k, v in channel.items() if k != "channel_type"}
    assert inbound_from({**app_mention, "type": "app_mention", "text": "x"}, ME) is not None

    for ignored in (
        {**dm, "text": "x", "user": BOT_USER_ID},
        {**dm, "text": "x", "bot_id": "B2"},
        {**dm, "text": "x", "subtype": "message_deleted"},
        {**dm, "text": "x", "subtype": "message_changed"},
        {"type": "reaction_added", "user": "U1"},
    ):
        assert inbound_from(ignored, ME) is None


def test_thread_context_quotes_the_last_messages_before_this_one() -> None:
    replies = [
        {"ts": f"{n}.0", "user": "U1", "text": f"message {n}\nline two"} for n in range(1, 30)
    ]
    replies.append({"ts": "14.5", "user": BOT_USER_ID, "bot_id": "BBOT0001", "text": "mine"})
    replies.append({"ts": "14.6", "user": "U2", "subtype": "channel_join", "text": "joined"})
    context = thread_context(replies, before_ts="15.0", me=ME, limit=3)
    assert context == (
        Quoted("thread", "U1", "message 13\nline two"),
        Quoted("thread", "U1", "message 14\nline two"),
        Quoted("thread", "chorus", "mine"),
    )
    assert thread_context(replies, before_ts="1.0", me=ME, limit=3) == ()


def test_doctor_names_the_bot_and_never_the_token(
    chorus_home: Path, server: FakeOpenAI, slack: FakeSlack
) -> None:
    result = check_slack(slack_settings(chorus_home, server, slack))
    assert result.ok, result.detail
    assert "@chorus" in result.detail and TOKEN not in result.detail
    assert "Events API over HTTP" in result.detail

    wrong = slack_settings(chorus_home, server, slack, SLACK_BOT_TOKEN="xoxb-wrong")
    result = check_slack(wrong)
    assert not result.ok and "rejected" in result.detail and "xoxb-wrong" not in result.detail

    no_secret = slack_settings(chorus_home, server, slack, SLACK_SIGNING_SECRET="")
    assert not check_slack(no_secret).ok


def test_doctor_without_slack(chorus_home: Path, server: FakeOpenAI, slack: FakeSlack) -> None:
    settings = slack_settings(chorus_home, server, slack, SLACK_BOT_TOKEN="")
    assert check_slack(settings).detail == "not configured"


def test_enabled_adapters(chorus_home: Path, server: FakeOpenAI, slack: FakeSlack) -> None:
    [adapter] = enabled_adapters(slack_settings(chorus_home, server, slack))
    assert isinstance(adapter, SlackAdapter) and not adapter.socket_mode
    assert [r[:2] for r in adapter.http_routes()] == [
        ("POST", "/slack/events"),
        ("POST", "/slack/commands"),
    ]
    socket = slack_settings(
        chorus_home, server, slack, SLACK_APP_TOKEN=APP_TOKEN, SLACK_SIGNING_SECRET=""
    )
    [adapter] = enabled_adapters(socket)
    assert isinstance(adapter, SlackAdapter) and adapter.socket_mode
    assert adapter.http_routes() == []
    with pytest.raises(ConfigError):
        SlackAdapter(SlackSettings())


@pytest.mark.parametrize(
    ("env", "names"),
    [
        ({"SLACK_SIGNING_SECRET": ""}, ["SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"]),
        ({"SLACK_BOT_TOKEN": "", "SLACK_APP_TOKEN": APP_TOKEN}, ["SLACK_BOT_TOKEN"]),
        ({"SLACK_BOT_TOKEN": APP_TOKEN}, ["SLACK_BOT_TOKEN", "app-level token", "xoxb-"]),
        ({"SLACK_BOT_TOKEN": "xoxp-user-token-1"}, ["SLACK_BOT_TOKEN", "xoxb-"]),
        ({"SLACK_APP_TOKEN": TOKEN}, ["SLACK_APP_TOKEN", "bot token", "xapp-"]),
        ({"SLACK_APP_TOKEN": "nonsense-value"}, ["SLACK_APP_TOKEN", "xapp-"]),
    ],
)
def test_an_unusable_set_up_names_the_variable_at_start_and_in_doctor(
    chorus_home: Path, server: FakeOpenAI, slack: FakeSlack, env: dict[str, str], names: list[str]
) -> None:
    settings = slack_settings(chorus_home, server, slack, **env)
    with pytest.raises(ConfigError) as raised:
        enabled_adapters(settings)
    assert all(name in str(raised.value) for name in names), str(raised.value)
    result = check_slack(settings)
    assert not result.ok and all(name in result.detail for name in names)
    for secret in (TOKEN, APP_TOKEN, "xoxp-user-token-1"):
        assert secret not in str(raised.value) and secret not in result.detail


def test_doctor_checks_the_app_level_token_in_socket_mode(
    chorus_home: Path, server: FakeOpenAI, slack: FakeSlack
) -> None:
    good = slack_settings(chorus_home, server, slack, SLACK_APP_TOKEN=APP_TOKEN)
    result = check_slack(good)
    assert result.ok and "Socket Mode" in result.detail, result.detail
    wrong = slack_settings(chorus_home, server, slack, SLACK_APP_TOKEN="xapp-1-wrong-one")
    result = check_slack(wrong)
    assert not result.ok and "SLACK_APP_TOKEN" in result.detail and "rejected" in result.detail


def test_doctor_says_a_signing_secret_goes_unused_in_socket_mode(
    chorus_home: Path, server: FakeOpenAI, slack: FakeSlack
) -> None:
    both = slack_settings(chorus_home, server, slack, SLACK_APP_TOKEN=APP_TOKEN)
    result = check_slack(both)
    assert result.ok and "Socket Mode (SLACK_SIGNING_SECRET is set too" in result.detail
    alone = slack_settings(
        chorus_home, server, slack, SLACK_APP_TOKEN=APP_TOKEN, SLACK_SIGNING_SECRET=""
    )
    result = check_slack(alone)
    assert result.ok and "SLACK_SIGNING_SECRET" not in result.detail, result.detail

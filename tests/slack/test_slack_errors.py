"""A send or edit Slack refuses leaves the adapter as an ``AdapterError``."""

from __future__ import annotations

import logging

import pytest
from slack_sdk.errors import SlackApiError

from gateway.adapters.slack._client import RATE_LIMIT_RETRIES
from gateway.errors import ChatForbidden, MessageNotFound, RateLimited
from gateway.events import OutboundMessage, SentMessage
from tests.fakes.slack_requests import BOT_USER_ID
from tests.slack.conftest import ANN, CHANNEL, DM_ANN, GatewayFactory


def _out(chat_id: str = DM_ANN, text: str = "hello") -> OutboundMessage:
    return OutboundMessage(platform="slack", chat_id=chat_id, text=text)


async def test_a_send_still_rate_limited_after_the_sdk_retries_is_rate_limited(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    gw.slack.rate_limit("chat.postMessage", RATE_LIMIT_RETRIES, retry_after=0)
    gw.slack.rate_limit("chat.postMessage", 1, retry_after=7)  # the answer that is given up on
    with pytest.raises(RateLimited) as raised:
        await gw.adapter.send(_out())
    error = raised.value
    assert error.platform == "slack"
    assert error.retry_after == 7.0
    assert error.retryable
    assert isinstance(error.__cause__, SlackApiError)
    assert error.__cause__.response.status_code == 429
    assert gw.slack.posted_in(DM_ANN) == []


async def test_a_channel_the_bot_is_not_in_is_chat_forbidden(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    gw.slack.outside.add(CHANNEL)
    with pytest.raises(ChatForbidden) as raised:
        await gw.adapter.send(_out(CHANNEL))
    assert raised.value.platform == "slack"
    assert raised.value.retry_after is None and not raised.value.retryable
    assert isinstance(raised.value.__cause__, SlackApiError)
    assert "not_in_channel" in str(raised.value)


async def test_editing_an_unknown_message_is_message_not_found(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    with pytest.raises(MessageNotFound) as raised:
        await gw.adapter.edit(SentMessage(DM_ANN, "999.000001"), "new text")
    assert raised.value.platform == "slack"
    assert isinstance(raised.value.__cause__, SlackApiError)


@pytest.mark.parametrize("wall", ["gone", "archived"])
async def test_a_channel_gone_or_archived_is_one_warning_and_no_apology(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture, wall: str
) -> None:
    gw = await make_gateway()
    getattr(gw.slack, wall).add(CHANNEL)
    kind = {"channel": CHANNEL, "channel_type": "channel"}

    def posts() -> int:
        return len([c for c in gw.slack.calls if c.method == "chat.postMessage"])

    for count, text in enumerate(("hello?", "still there?"), start=1):
        gw.server.reply("An answer that cannot arrive.")
        await gw.event(gw.slack.person(f"<@{BOT_USER_ID}> {text}", user=ANN, **kind))
        await gw.slack.wait_for(lambda n=count: posts() >= n, what="the refused answer")
        await gw.settle()
    assert posts() == 2  # one answer per message; no apology after it
    walls = [r for r in caplog.records if "cannot write in chat" in r.getMessage()]
    assert [r.levelno for r in walls] == [logging.WARNING]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]

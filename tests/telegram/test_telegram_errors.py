"""A send or edit the Bot API refuses leaves the adapter as an ``AdapterError``."""

from __future__ import annotations

import logging

import pytest
from telegram.error import BadRequest, Forbidden, RetryAfter

from gateway.adapters.telegram._send import MAX_FLOOD_WAIT
from gateway.errors import AdapterError, ChatForbidden, MessageNotFound, RateLimited
from gateway.events import OutboundMessage, SentMessage
from tests.telegram.conftest import ANN, GatewayFactory


def _out(text: str = "hello") -> OutboundMessage:
    return OutboundMessage(platform="telegram", chat_id=str(ANN), text=text)


async def test_a_flood_wait_too_long_to_sit_out_is_rate_limited(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    wait = int(MAX_FLOOD_WAIT) + 5
    gw.telegram.flood(1, retry_after=wait, methods=("sendMessage",))
    with pytest.raises(RateLimited) as raised:
        await gw.adapter.send(_out())
    error = raised.value
    assert error.platform == "telegram"
    assert error.retry_after == float(wait)
    assert error.retryable
    assert isinstance(error.__cause__, RetryAfter)
    assert gw.telegram.in_chat(ANN) == []


async def test_a_person_who_blocked_the_bot_is_chat_forbidden(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    gw.telegram.blocked.add(ANN)
    with pytest.raises(ChatForbidden) as raised:
        await gw.adapter.send(_out())
    assert raised.value.platform == "telegram"
    assert raised.value.retry_after is None and not raised.value.retryable
    assert isinstance(raised.value.__cause__, Forbidden)


async def test_editing_a_message_that_is_gone_is_message_not_found(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    with pytest.raises(MessageNotFound) as raised:
        await gw.adapter.edit(SentMessage(str(ANN), "424242"), "new text")
    assert raised.value.platform == "telegram"
    assert isinstance(raised.value.__cause__, BadRequest)
    assert isinstance(raised.value, AdapterError)


async def test_a_person_who_blocked_the_bot_is_one_warning_and_no_apology(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    gw = await make_gateway()
    gw.telegram.blocked.add(ANN)

    def refused() -> list[object]:
        calls = gw.telegram.calls_of("sendMessage", 403)
        return [c for c in calls if int(c.params["chat_id"]) == ANN]

    for count, text in enumerate(("hello?", "still there?"), start=1):
        gw.server.reply("An answer that cannot arrive.")
        gw.telegram.message(text, user_id=ANN)
        await gw.telegram.wait_for(lambda n=count: len(refused()) >= n, what="the refused answer")
        await gw.settle()
    assert len(refused()) == 2  # one answer per message; no apology after it
    walls = [r for r in caplog.records if "cannot write in chat" in r.getMessage()]
    assert [r.levelno for r in walls] == [logging.WARNING]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]

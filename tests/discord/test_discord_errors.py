"""A send or edit Discord refuses leaves the adapter as an ``AdapterError``."""

from __future__ import annotations

import logging

import discord
import pytest

from gateway.errors import ChatForbidden, MessageNotFound, RateLimited
from gateway.events import OutboundMessage, SentMessage
from tests.discord.conftest import ANN, DM_ANN, GatewayFactory


def _out(text: str = "hello") -> OutboundMessage:
    return OutboundMessage(platform="discord", chat_id=str(DM_ANN), text=text)


async def test_a_send_still_rate_limited_after_the_sdk_retries_is_rate_limited(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    gw.discord.rate_limit(5, retry_after=0.05)  # discord.py tries a request five times
    with pytest.raises(RateLimited) as raised:
        await gw.adapter.send(_out())
    error = raised.value
    assert error.platform == "discord"
    assert error.retry_after == 0.05
    assert error.retryable
    assert isinstance(error.__cause__, discord.HTTPException)
    assert error.__cause__.status == 429
    assert gw.discord.posted_in(DM_ANN) == []


async def test_a_channel_the_bot_cannot_see_is_chat_forbidden(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    gw.discord.forbidden.add(DM_ANN)
    with pytest.raises(ChatForbidden) as raised:
        await gw.adapter.send(_out())
    assert raised.value.platform == "discord"
    assert raised.value.retry_after is None and not raised.value.retryable
    assert isinstance(raised.value.__cause__, discord.Forbidden)


async def test_editing_an_unknown_message_is_message_not_found(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    with pytest.raises(MessageNotFound) as raised:
        await gw.adapter.edit(SentMessage(str(DM_ANN), "123456789012345678"), "new text")
    assert raised.value.platform == "discord"
    assert isinstance(raised.value.__cause__, discord.NotFound)


async def test_a_missing_send_permission_is_one_warning_and_no_apology(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    gw = await make_gateway()
    gw.discord.no_send.add(DM_ANN)

    def refused() -> int:
        return len(gw.discord.calls_of("POST", f"/channels/{DM_ANN}/messages", status=403))

    for count, text in enumerate(("hello?", "still there?"), start=1):
        gw.server.reply("An answer that cannot arrive.")
        gw.discord.message(text, author=ANN, channel_id=DM_ANN)
        await gw.discord.wait_for(lambda n=count: refused() >= n, what="the refused answer")
        await gw.settle()
    assert refused() == 2  # one answer per message; no apology after it
    walls = [r for r in caplog.records if "cannot write in chat" in r.getMessage()]
    assert [r.levelno for r in walls] == [logging.WARNING]
    assert "50013" in walls[0].getMessage()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]

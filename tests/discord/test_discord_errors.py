"""A send or edit Discord refuses leaves the adapter as an ``AdapterError``."""

from __future__ import annotations

import discord
import pytest

from gateway.errors import ChatForbidden, MessageNotFound, RateLimited
from gateway.events import OutboundMessage, SentMessage
from tests.discord.conftest import DM_ANN, GatewayFactory


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

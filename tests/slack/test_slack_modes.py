"""Socket Mode and HTTP both configured: the gateway says it uses Socket Mode, and Slack's
HTTP requests to the events path get 404 with a hint instead of going unanswered."""

from __future__ import annotations

import json
import logging

import aiohttp
import pytest

from gateway.adapters.slack import SlackAdapter
from tests.fakes.slack_requests import SIGNING_SECRET, event_callback, post_event
from tests.slack.conftest import ANN, DM_ANN, GatewayFactory


async def test_both_configured_uses_socket_mode_and_http_gets_404_with_a_hint(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gateway.adapters.slack")
    gw = await make_gateway(socket=True, SLACK_SIGNING_SECRET=SIGNING_SECRET)
    assert gw.adapter.socket_mode and gw.adapter.mode() == "Socket Mode"
    lines = [r.getMessage() for r in caplog.records if "both set" in r.getMessage()]
    assert len(lines) == 1 and "using Socket Mode" in lines[0]
    assert SIGNING_SECRET not in caplog.text

    event = gw.slack.person("hi", user=ANN, channel=DM_ANN)
    status, body = await post_event(gw.events_url, event_callback(event))
    assert status == 404
    hint = json.loads(body)["hint"]
    assert "Socket Mode" in hint and "SLACK_APP_TOKEN" in hint
    async with (
        aiohttp.ClientSession() as session,
        session.post(gw.commands_url, data=b"command=%2Fchorus") as response,
    ):
        assert response.status == 404 and "Socket Mode" in await response.text()
    await gw.settle()
    assert gw.server.requests == []  # the HTTP delivery was not taken

    gw.server.reply("over the socket")
    gw.slack.socket_event(gw.slack.person("hello", user=ANN, channel=DM_ANN))
    [answer] = await gw.slack.wait_posted(DM_ANN, 1)
    assert answer.text == "over the socket"

    alone = gw.stack.settings.slack.model_copy(update={"signing_secret": None})
    assert SlackAdapter(alone).http_routes() == []  # Socket Mode alone: no HTTP paths at all

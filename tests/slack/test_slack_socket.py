"""Socket Mode end to end: slack-bolt's ``AsyncSocketModeHandler`` against the fake's websocket."""

from __future__ import annotations

import json
import logging

import aiohttp
import pytest

from tests.fakes.slack_api import APP_TOKEN
from tests.slack.conftest import ANN, BOB, DM_ANN, DM_BOB, GatewayFactory, user_texts


async def readyz(url: str) -> tuple[int, dict[str, object]]:
    async with aiohttp.ClientSession() as session, session.get(url + "/readyz") as response:
        return response.status, json.loads(await response.text())


async def test_a_dm_conversation_without_a_signing_secret_or_public_url(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    gw = await make_gateway(socket=True)
    slack, llm = gw.slack, gw.server
    assert gw.stack.settings.slack.signing_secret is None
    assert gw.adapter.http_routes() == [] and gw.adapter.is_connected()
    llm.reply("Hello Ann!")
    first = slack.socket_event(slack.person("hi there", user=ANN, channel=DM_ANN))
    [answer] = await slack.wait_posted(DM_ANN, 1)
    assert answer.text == "Hello Ann!" and first.acked
    llm.reply("You said hi.")
    slack.socket_event(slack.person("what did I say?", user=ANN, channel=DM_ANN))
    posted = await slack.wait_posted(DM_ANN, 2)
    assert posted[1].text == "You said hi."
    assert user_texts(llm.requests[-1])[-2:] == ["hi there", "what did I say?"]
    assert APP_TOKEN not in caplog.text and "ticket=t" not in caplog.text
    status, body = await readyz(gw.http.url)
    assert status == 200 and body["checks"]["adapter:slack"] is True  # type: ignore[index]


async def test_a_redelivered_envelope_is_acknowledged_and_answered_once(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(socket=True)
    slack = gw.slack
    gw.server.reply("once")
    event = slack.person("hello", user=BOB, channel=DM_BOB)
    first = slack.socket_event(event, event_id="EvSAME0001")
    await slack.wait_posted(DM_BOB, 1)
    again = slack.send_envelope("events_api", first.payload, retry_attempt=1)
    await slack.wait_acked(again)
    await gw.settle()
    assert len(slack.posted_in(DM_BOB)) == 1 and len(gw.server.requests) == 1


async def test_a_dropped_socket_shows_in_readiness_and_logs_and_reconnects(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    gw = await make_gateway(socket=True)
    slack = gw.slack
    slack.fail("apps.connections.open", 8)  # the way back in fails for a while
    slack.drop()
    await slack.wait_for(lambda: not gw.adapter.is_connected(), 10, "the drop to show")
    status, body = await readyz(gw.http.url)
    assert status == 503 and body["checks"]["adapter:slack"] is False  # type: ignore[index]
    await slack.wait_for(gw.adapter.is_connected, 30, "the reconnect")
    assert slack.socket.hellos == 2
    back = "slack: Socket Mode connected again"
    await slack.wait_for(lambda: back in caplog.messages, 5, "the log line")
    assert "slack: the Socket Mode connection was lost; reconnecting" in caplog.messages
    failures = [m for m in caplog.messages if m.startswith("Failed to retrieve WSS URL")]
    assert 1 <= len(failures) < 8  # the SDK's line for each failed attempt, quieted

    gw.server.reply("still here")
    slack.socket_event(slack.person("are you there?", user=ANN, channel=DM_ANN))
    [answer] = await slack.wait_posted(DM_ANN, 1)
    assert answer.text == "still here"


async def test_a_rejected_app_token_is_one_clear_error(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    gw = await make_gateway(socket=True, start_wait=2, SLACK_APP_TOKEN="xapp-1-revoked-token")
    assert not gw.adapter.is_connected()
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [r.getMessage() for r in errors] == [
        "slack failed: Slack rejected the app-level token (invalid_auth); check SLACK_APP_TOKEN"
    ]
    assert "xapp-1-revoked-token" not in caplog.text
    assert len(gw.slack.calls_of("apps.connections.open")) == 1


@pytest.mark.parametrize(
    "raw",
    [
        "not json at all",
        json.dumps({"envelope_id": "e1", "type": "events_api", "payload": {"event": "x"}}),
        json.dumps({"envelope_id": "e2", "type": "events_api", "payload": [1, 2]}),
        json.dumps({"envelope_id": "e3", "type": "slash_commands", "payload": {"command": 7}}),
    ],
)
async def test_a_malformed_envelope_never_silences_the_bot(
    make_gateway: GatewayFactory, raw: str
) -> None:
    gw = await make_gateway(socket=True)
    gw.slack.send_raw(raw)
    gw.server.reply("fine")
    gw.slack.socket_event(gw.slack.person("hello?", user=ANN, channel=DM_ANN))
    [answer] = await gw.slack.wait_posted(DM_ANN, 1)
    assert answer.text == "fine" and gw.adapter.is_connected()

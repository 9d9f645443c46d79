"""The App Home tab shows the person's ``/status`` and ``/help``, published on
``app_home_opened``, over HTTP and Socket Mode."""

from __future__ import annotations

from typing import Any

import pytest

from tests.slack.conftest import ANN, DM_ANN, STRANGER, GatewayFactory, SlackGateway
from tests.slack.test_slack_commands import MODES
from tests.waiting import until


def shown(view: dict[str, Any]) -> str:
    return "\n".join(str(b["text"]["text"]) for b in view["blocks"] if "text" in b)


async def deliver(gw: SlackGateway, event: dict[str, Any]) -> None:
    if gw.adapter.socket_mode:
        await gw.slack.wait_acked(gw.slack.socket_event(event))
    else:
        status, _ = await gw.event(event)
        assert status == 200


@pytest.mark.parametrize("socket", MODES)
async def test_opening_home_publishes_the_persons_status_and_help(
    make_gateway: GatewayFactory, socket: bool
) -> None:
    gw = await make_gateway(socket=socket)
    slack = gw.slack
    gw.server.reply("noted")
    await deliver(gw, slack.person("remember the blue door", user=ANN, channel=DM_ANN))
    await slack.wait_posted(DM_ANN, 1)
    await gw.settle()

    await deliver(gw, slack.home_opened(ANN, DM_ANN))
    await until(lambda: ANN in slack.views, what="the Home tab published")
    view = slack.views[ANN]
    assert view["type"] == "home"
    text = shown(view)
    assert f"slack:{ANN}" in text and "Session " in text and "1 turn" in text  # /status
    assert "/chorus whoami" in text and "/chorus admin" not in text  # /help, Slack's spelling
    assert slack.posted_in(DM_ANN)[-1].text == "noted"  # nothing posted into the chat


async def test_the_messages_tab_and_a_quick_reopen_publish_nothing(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    slack = gw.slack
    await deliver(gw, slack.home_opened(ANN, DM_ANN, tab="messages"))
    await deliver(gw, slack.home_opened(ANN, DM_ANN))
    await until(lambda: ANN in slack.views, what="the Home tab published")
    await deliver(gw, slack.home_opened(ANN, DM_ANN))
    await gw.settle()
    assert len(slack.calls_of("views.publish")) == 1


async def test_a_stranger_sees_why_not_and_nothing_of_anyone(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    slack = gw.slack
    await deliver(gw, slack.home_opened(STRANGER, "DSTRANGE"))
    await until(lambda: STRANGER in slack.views, what="the Home tab published")
    text = shown(slack.views[STRANGER])
    assert f"slack:{STRANGER}" in text and "Session " not in text


async def test_a_refused_publish_is_a_warning_not_a_crash(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    gw = await make_gateway()
    slack = gw.slack
    slack.fail("views.publish", 1, status=500)
    await deliver(gw, slack.home_opened(ANN, DM_ANN))
    await until(
        lambda: any("Home tab was not published" in r.getMessage() for r in caplog.records),
        what="the warning",
    )
    gw.server.reply("still here")
    await deliver(gw, slack.person("hello?", user=ANN, channel=DM_ANN))
    await slack.wait_posted(DM_ANN, 1)

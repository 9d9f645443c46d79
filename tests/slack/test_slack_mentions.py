"""People and channels a Slack message mentions reach the model by name, not by id."""

from __future__ import annotations

import logging

import pytest

from tests.fakes.slack_api import Call
from tests.fakes.slack_requests import BOT_USER_ID
from tests.slack.conftest import ANN, BOB, CHANNEL, DM_BOB, GatewayFactory, user_texts

GHOST = "UGHOST01"
CAROL = "UCAROL02"


def lookups_of(calls: list[Call], user: str) -> int:
    return sum(1 for call in calls if call.params.get("user") == user)


async def test_mentions_read_as_names_and_are_looked_up_once(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    gw = await make_gateway()
    slack = gw.slack
    slack.add_user(ANN, "Ann Lee")
    slack.add_user(BOB, "Bob Builder")
    gw.server.reply("I will.")
    gw.server.reply("Sure.")
    caplog.set_level(logging.DEBUG, logger="gateway.adapters.slack")
    first = f"ask <@{ANN}> and <@UCAROL01|carol> in <#CDEPLOY1|deploys>, not <@{GHOST}>"
    await gw.event(slack.person(first, user=BOB, channel=DM_BOB))
    await slack.wait_posted(DM_BOB, 1)
    await gw.event(slack.person(f"<@{ANN}> again", user=BOB, channel=DM_BOB))
    await slack.wait_posted(DM_BOB, 2)

    texts = user_texts(gw.server.requests[-1])
    assert texts[-2:] == [
        "ask @Ann Lee and @carol in #deploys, not @UGHOST01",
        "@Ann Lee again",
    ]
    calls = slack.calls_of("users.info", status=None)
    assert lookups_of(calls, ANN) == 1  # cached between the two messages
    assert lookups_of(calls, GHOST) == 1  # the unknown one too, for a while
    assert lookups_of(calls, "UCAROL01") == 0  # named in the message already
    unknown = [r for r in caplog.records if GHOST in r.getMessage()]
    assert unknown and all(r.levelno <= logging.INFO for r in unknown)
    assert not [
        r for r in caplog.records if r.levelno >= logging.WARNING and "users.info" in r.getMessage()
    ]


async def test_a_failing_lookup_keeps_the_id_and_the_message(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    slack = gw.slack
    slack.add_user(ANN, "Ann Lee")
    slack.add_user(BOB, "Bob Builder")
    slack.add_user(CAROL, "Carol King")
    slack.fail("users.info", 1)  # the lookup of Ann
    gw.server.reply("Noted.")
    gw.server.reply("Noted too.")
    await gw.event(slack.person(f"tell <@{ANN}> hi", user=BOB, channel=DM_BOB))
    posted = await slack.wait_posted(DM_BOB, 1)
    assert posted[0].text == "Noted."
    await gw.event(slack.person(f"and <@{CAROL}>", user=BOB, channel=DM_BOB))
    await slack.wait_posted(DM_BOB, 2)
    assert user_texts(gw.server.requests[-1])[-2:] == [f"tell @{ANN} hi", "and @Carol King"]


async def test_a_thread_quoted_as_context_names_the_people_it_mentions(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    slack = gw.slack
    slack.add_user(ANN, "Ann Lee")
    slack.add_user(BOB, "Bob Builder")
    slack.add_user(CAROL, "Carol King")
    root = slack.person(
        f"<@{CAROL}> the deploy failed", user=BOB, channel=CHANNEL, channel_type="channel"
    )
    gw.server.reply("Look at the logs.")
    ask = slack.person(
        f"<@{BOT_USER_ID}> what now?",
        user=ANN,
        channel=CHANNEL,
        channel_type="channel",
        thread_ts=root["ts"],
    )
    await gw.event(ask)
    await slack.wait_posted(CHANNEL, 1)
    [text] = user_texts(gw.server.requests[0])
    assert "Bob Builder: @Carol King the deploy failed" in text and CAROL not in text

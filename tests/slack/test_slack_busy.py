"""The busy indicator on Slack: a reaction on the person's message, or the assistant
thread's status, while the model works; gone when the answer starts or the turn fails."""

from __future__ import annotations

import logging

import pytest

from gateway.adapters.slack import _busy as busy_module
from gateway.adapters.slack._busy import REACTION, STATUS
from tests.fakes.slack_requests import BOT_USER_ID
from tests.slack.conftest import ANN, CHANNEL, DM_ANN, GatewayFactory
from tests.waiting import until


async def test_a_reaction_while_the_model_works_removed_when_the_answer_starts(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    slack = gw.slack
    gw.server.reply("Here you are.", delay=1.0)
    event = slack.person("what is on today?", user=ANN, channel=DM_ANN)
    await gw.event(event)
    await until(lambda: slack.reactions_on(DM_ANN, event["ts"]) == [REACTION], what="reaction")
    assert slack.posted_in(DM_ANN) == []  # shown while the model is still at work

    await slack.wait_posted(DM_ANN, 1)
    await until(lambda: slack.reactions_on(DM_ANN, event["ts"]) == [], what="removed")
    added = slack.calls_of("reactions.add")[0].at
    removed = slack.calls_of("reactions.remove")[0].at
    posted = slack.calls_of("chat.postMessage")[0].at
    assert added < posted <= removed
    assert slack.reaction_log == [
        ("add", DM_ANN, event["ts"], REACTION),
        ("remove", DM_ANN, event["ts"], REACTION),
    ]
    assert slack.calls_of("assistant.threads.setStatus", status=None) == []


async def test_in_a_channel_the_mention_gets_the_reaction(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    slack = gw.slack
    gw.server.reply("Hello, channel.", delay=0.5)
    kind = {"channel": CHANNEL, "channel_type": "channel"}
    event = slack.person(f"<@{BOT_USER_ID}> hello", user=ANN, **kind)
    await gw.event(event)
    await until(lambda: slack.reactions_on(CHANNEL, event["ts"]) == [REACTION], what="reaction")
    [answer] = await slack.wait_posted(CHANNEL, 1)
    assert answer.thread_ts == event["ts"]
    await until(lambda: slack.reactions_on(CHANNEL, event["ts"]) == [], what="removed")


async def test_a_failed_turn_takes_the_reaction_away(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    slack = gw.slack
    gw.server.error(400, "bad request", times=3)
    event = slack.person("this will fail", user=ANN, channel=DM_ANN)
    await gw.event(event)
    await until(lambda: slack.calls_of("reactions.add"), what="reaction")
    await until(lambda: slack.calls_of("reactions.remove"), what="removed after the failure")
    assert slack.reactions_on(DM_ANN, event["ts"]) == []
    await gw.settle()
    assert [entry[0] for entry in slack.reaction_log] == ["add", "remove"]


async def test_an_assistant_thread_shows_the_status_which_the_answer_clears(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    slack = gw.slack
    thread = slack.next_ts()
    await gw.event(slack.assistant_thread_started(ANN, DM_ANN, thread))
    gw.server.reply("Thinking done.", delay=1.0)
    event = slack.person("plan my week", user=ANN, channel=DM_ANN, thread_ts=thread)
    await gw.event(event)
    await until(lambda: slack.statuses.get((DM_ANN, thread)) == STATUS, what="status")

    [answer] = await slack.wait_posted(DM_ANN, 1)
    assert answer.thread_ts == thread
    await gw.settle()
    # set once; cleared by Slack when the answer was posted, not set again or cleared twice
    assert slack.status_log == [(DM_ANN, thread, STATUS), (DM_ANN, thread, "")]
    assert slack.calls_of("reactions.add", status=None) == []


async def test_a_thread_slack_never_announced_gets_a_reaction(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    slack = gw.slack
    root = slack.person("first", user=ANN, channel=DM_ANN)
    gw.server.reply("ok", delay=0.3)
    event = slack.person("second", user=ANN, channel=DM_ANN, thread_ts=root["ts"])
    await gw.event(event)
    await slack.wait_posted(DM_ANN, 1)
    await until(lambda: len(slack.reaction_log) == 2, what="added and removed")
    assert slack.calls_of("assistant.threads.setStatus", status=None) == []


async def test_without_the_reactions_scope_one_warning_and_answers_go_on(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    gw = await make_gateway()
    slack = gw.slack
    slack.scopes.discard("reactions:write")
    caplog.set_level(logging.WARNING, logger="gateway.adapters.slack")
    for n, text in enumerate(("one", "two"), start=1):
        gw.server.reply(f"answer {n}")
        await gw.event(slack.person(text, user=ANN, channel=DM_ANN))
        await slack.wait_posted(DM_ANN, n)
    await gw.settle()
    assert len(slack.calls_of("reactions.add", status=None)) == 1  # not asked again
    warnings = [r.getMessage() for r in caplog.records if "reactions:write" in r.getMessage()]
    assert len(warnings) == 1 and "busy indicator" in warnings[0]


async def test_a_long_turn_sets_the_status_again_and_none_after_the_answer(
    make_gateway: GatewayFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(busy_module, "STATUS_RENEW", 0.3)  # Slack drops a status after 2 min
    gw = await make_gateway()
    slack = gw.slack
    thread = slack.next_ts()
    await gw.event(slack.assistant_thread_started(ANN, DM_ANN, thread))
    gw.server.reply("That took a while.", delay=1.5)
    await gw.event(slack.person("a long one", user=ANN, channel=DM_ANN, thread_ts=thread))
    await slack.wait_posted(DM_ANN, 1)
    await gw.settle()
    log = [status for channel, ts, status in slack.status_log if (channel, ts) == (DM_ANN, thread)]
    assert log.count(STATUS) >= 2
    assert log[-1] == "" and slack.statuses.get((DM_ANN, thread)) is None

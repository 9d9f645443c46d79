"""``/chorus …``: acknowledged at once, answered privately through ``response_url``,
in HTTP mode and in Socket Mode, through the one dispatch and audit path."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.fakes.slack_requests import BOT_USER_ID, command_payload, post_command
from tests.slack.conftest import ADMIN, ANN, CHANNEL, DM_ANN, STRANGER, GatewayFactory, SlackGateway

MODES = [pytest.param(False, id="http"), pytest.param(True, id="socket")]


async def slash(gw: SlackGateway, text: str, *, user: str, channel: str) -> dict[str, Any]:
    """``/chorus text`` the way the mode delivers it; returns the one answer posted back."""
    if gw.adapter.socket_mode:
        envelope = gw.slack.socket_command(text, user=user, channel=channel)
        await gw.slack.wait_acked(envelope)
        url = envelope.payload["response_url"]
    else:
        status, url = await gw.command(text, user=user, channel=channel)
        assert status == 200
    answer = await gw.slack.wait_response(url)
    await gw.settle()
    assert len(gw.slack.responses_to(url)) == 1
    return answer


@pytest.mark.parametrize("socket", MODES)
async def test_whoami_is_answered_ephemerally_with_the_callers_name(
    make_gateway: GatewayFactory, socket: bool
) -> None:
    gw = await make_gateway(socket=socket)
    gw.slack.add_user(ANN, "Ann Example")
    answer = await slash(gw, "whoami", user=ANN, channel=DM_ANN)
    assert answer["response_type"] == "ephemeral"
    assert f"slack:{ANN} (Ann Example)" in answer["text"]
    assert gw.slack.calls_of("chat.postMessage") == []  # nothing in the channel


@pytest.mark.parametrize("socket", MODES)
async def test_admin_sessions_for_the_admin_refused_and_audited_for_others(
    make_gateway: GatewayFactory, socket: bool
) -> None:
    gw = await make_gateway(socket=socket)
    gw.server.reply("hello")
    if socket:
        gw.slack.socket_event(gw.slack.person("hi", user=ANN, channel=DM_ANN))
    else:
        await gw.event(gw.slack.person("hi", user=ANN, channel=DM_ANN))
    await gw.slack.wait_posted(DM_ANN, 1)

    ok = await slash(gw, "admin sessions", user=ADMIN, channel=CHANNEL)
    assert ok["response_type"] == "ephemeral"
    assert "open session" in ok["text"] and f"slack:{ANN}" in ok["text"]
    refused = await slash(gw, "admin sessions", user=ANN, channel=DM_ANN)
    assert "admins only" in refused["text"] and "open session" not in refused["text"]
    stranger = await slash(gw, "admin users", user=STRANGER, channel=CHANNEL)
    assert "admins" not in stranger["text"] and f"slack:{STRANGER}" in stranger["text"]

    audit = [(e.actor, e.args, e.outcome) for e in gw.stack.gateway_db.audit_entries()]
    assert (f"slack:{ADMIN}", "sessions", "ok") in audit
    assert (f"slack:{ANN}", "sessions", "refused") in audit
    assert (f"slack:{STRANGER}", "users", "refused:not_allowed") in audit
    assert len(gw.slack.calls_of("chat.postMessage")) == 1  # the DM answer, nothing else


@pytest.mark.parametrize("socket", MODES)
async def test_help_alone_and_answers_spelled_the_slack_way(
    make_gateway: GatewayFactory, socket: bool
) -> None:
    gw = await make_gateway(socket=socket)
    user_help = await slash(gw, "", user=ANN, channel=DM_ANN)
    assert "/chorus whoami" in user_help["text"] and "/chorus admin" not in user_help["text"]
    admin_help = await slash(gw, "help", user=ADMIN, channel=DM_ANN)
    assert "/chorus admin" in admin_help["text"]
    unknown = await slash(gw, "/frobnicate", user=ANN, channel=DM_ANN)
    assert "Unknown command /frobnicate" in unknown["text"] and "/chorus help" in unknown["text"]


async def test_new_acts_on_the_callers_session_in_that_channel(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    gw.server.reply("noted")
    await gw.event(gw.slack.person("remember the blue door", user=ANN, channel=DM_ANN))
    await gw.slack.wait_posted(DM_ANN, 1)
    await gw.settle()
    in_channel = await slash(gw, "new", user=ANN, channel=CHANNEL)
    assert "already" in in_channel["text"].lower()  # her DM session is another one
    in_dm = await slash(gw, "new", user=ANN, channel=DM_ANN)
    assert "started a new session" in in_dm["text"].lower()


async def test_a_command_with_a_bad_signature_is_refused(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    status, url = await gw.command("admin users", user=ADMIN, channel=DM_ANN, secret="wrong")
    assert status == 401
    await gw.settle()
    assert gw.slack.responses_to(url) == []
    assert gw.stack.gateway_db.audit_entries() == []


async def test_a_long_answer_comes_in_parts_and_a_command_while_stopping_is_told_so(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    for n in range(60):
        gw.slack.add_user(f"UMANY{n:03d}", f"Person {n}")
        await slash(gw, f"admin allow slack:UMANY{n:03d}", user=ADMIN, channel=DM_ANN)
    url = gw.slack.response_url()
    form = command_payload("admin users", user=ADMIN, channel=DM_ANN, response_url=url)
    status, _ = await post_command(gw.commands_url, form)
    assert status == 200
    await gw.slack.wait_response(url)
    await gw.settle()
    parts = gw.slack.responses_to(url)
    assert all(len(p["text"]) <= 3500 for p in parts)
    assert sum(p["text"].count("slack:UMANY") for p in parts) == 60

    await gw.adapter.pause()
    status, body = await post_command(gw.commands_url, form)
    assert status == 200 and "restarting" in body


async def test_help_lists_only_commands_slack_has_however_it_is_asked(
    make_gateway: GatewayFactory,
) -> None:
    """Slack takes no typed ``/new`` (nor ``/reset``): every command is ``/chorus …``,
    in the answer to ``/chorus help`` and in ``@chorus /help`` answered in the chat."""
    gw = await make_gateway()
    answered = (await slash(gw, "help", user=ANN, channel=DM_ANN))["text"]
    kind = {"channel": CHANNEL, "channel_type": "channel"}
    await gw.event(gw.slack.person(f"<@{BOT_USER_ID}> /help", user=ANN, **kind))
    [posted] = await gw.slack.wait_posted(CHANNEL, 1)
    for listing in (answered, posted.text):
        assert "/chorus new, /chorus reset" in listing
        assert "/chorus whoami" in listing
        bare = re.findall(r"(?<![\w/])/(\w+)", listing.replace("/chorus", "chorus"))
        assert bare == [], listing  # no command spelled the way Slack cannot take it
        assert "chorus start" not in listing  # Telegram's /start

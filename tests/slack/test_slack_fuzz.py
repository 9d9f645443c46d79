"""Signed Events API payloads bent out of shape: after any of them the next message is answered."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from tests.fakes.slack_requests import event_callback, post_event
from tests.fuzz import bent
from tests.slack.conftest import ANN, DM_ANN, GatewayFactory, SlackGateway

TEMPLATE: dict[str, Any] = event_callback(
    {
        "type": "message",
        "channel": DM_ANN,
        "channel_type": "im",
        "user": ANN,
        "text": "<@UBOT> hello there",
        "ts": "1800000000.000100",
        "thread_ts": "1800000000.000050",
        "files": [{"mimetype": "image/png", "name": "a.png", "size": 10}],
        "user_profile": {"display_name": "Ann"},
    }
)

_gateways: dict[int, SlackGateway] = {}
_markers = itertools.count(1)


@settings(
    max_examples=25,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(batch=st.lists(bent(TEMPLATE), min_size=1, max_size=6))
@example(batch=[{**TEMPLATE, "event_id": "\ud800"}])  # an id the database cannot store as is
async def test_no_event_silences_the_bot(make_gateway: GatewayFactory, batch: list[Any]) -> None:
    gw = _gateways.get(id(make_gateway))
    if gw is None:
        gw = _gateways[id(make_gateway)] = await make_gateway()
    for payload in batch:
        status, _ = await post_event(gw.events_url, payload if isinstance(payload, dict) else {})
        assert status < 500
    before = len(gw.slack.calls_of("chat.postMessage"))
    gw.server.reply(f"marker {next(_markers)}")
    await gw.event(gw.slack.person("are you there?", user=ANN, channel=DM_ANN))
    await gw.slack.wait_for(
        lambda: len(gw.slack.calls_of("chat.postMessage")) > before, what="the marker"
    )
    assert gw.adapter.is_connected()

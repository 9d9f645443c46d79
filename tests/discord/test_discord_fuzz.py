"""Gateway events bent out of shape: after any of them the next message is answered."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.discord.conftest import ANN, DM_ANN, DiscordGateway, GatewayFactory
from tests.fakes.discord_data import message, snowflake
from tests.fuzz import bent

TEMPLATE: dict[str, Any] = message(
    message_id=snowflake(), channel_id=DM_ANN, author=ANN, content="hello there"
)

_gateways: dict[int, DiscordGateway] = {}
_markers = itertools.count(1)


@settings(
    max_examples=20,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(batch=st.lists(bent(TEMPLATE), min_size=1, max_size=6))
async def test_no_message_event_silences_the_bot(
    make_gateway: GatewayFactory, batch: list[Any]
) -> None:
    gw = _gateways.get(id(make_gateway))
    if gw is None:
        gw = _gateways[id(make_gateway)] = await make_gateway()
    fake = gw.discord
    for data in batch:
        fake.dispatch("MESSAGE_CREATE", data)
    before = len(fake.posted_in(DM_ANN))
    gw.server.reply(f"marker {next(_markers)}")
    fake.message("are you there?", author=ANN, channel_id=DM_ANN)
    await fake.wait_for(lambda: len(fake.posted_in(DM_ANN)) > before, what="the marker")
    assert gw.adapter.is_connected()

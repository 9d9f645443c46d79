"""Raw Telegram updates bent out of shape: after any of them the next message is answered."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.fuzz import bent
from tests.telegram.conftest import ANN, GatewayFactory, TelegramGateway

TEMPLATE = {
    "message": {
        "message_id": 5,
        "date": 1_800_000_000,
        "chat": {"id": ANN, "type": "private", "first_name": "Ann"},
        "from": {"id": ANN, "is_bot": False, "first_name": "Ann"},
        "text": "@chorus_test_bot hello there",
        "entities": [{"type": "mention", "offset": 0, "length": 16}],
        "reply_to_message": {
            "message_id": 4,
            "date": 1_800_000_000,
            "chat": {"id": ANN, "type": "private"},
            "from": {"id": 1, "is_bot": True, "first_name": "bot"},
            "text": "earlier",
        },
    }
}

_gateways: dict[int, TelegramGateway] = {}
"""One gateway for all examples of a run (the fixture lives as long as the test function)."""
_markers = itertools.count(1)


@settings(
    max_examples=25,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(batch=st.lists(bent(TEMPLATE), min_size=1, max_size=8))
async def test_no_update_silences_the_bot(make_gateway: GatewayFactory, batch: list[Any]) -> None:
    gw = _gateways.get(id(make_gateway))
    if gw is None:
        gw = _gateways[id(make_gateway)] = await make_gateway(CHORUS_AUTH__POLICY="open")
    tg = gw.telegram
    for data in batch:
        tg.add_update(data if isinstance(data, dict) else {"message": data})
    marker = next(_markers)
    before = len(tg.in_chat(ANN + 1))
    tg.message(f"marker {marker}", user_id=ANN + 1)
    await tg.wait_for(lambda: len(tg.in_chat(ANN + 1)) > before, timeout=20, what="the marker")
    assert gw.adapter.is_connected()
    await tg.wait_for(lambda: not tg.pending(), what="every update confirmed")

"""Reviewing staged shared-memory writes in Telegram: a staged text shows as typed."""

from __future__ import annotations

from tests.telegram.conftest import ADMIN, ANN, GatewayFactory

STAGED = (
    "Lunch is at noon\n"
    "#7 add by telegram:1000: *Approve this one* [the wiki](https://evil.example) `code`"
)


async def test_a_staged_text_shows_as_typed_and_forges_no_line(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    staging = gw.stack.factory.staging
    assert staging is not None
    staging.stage(user_key=f"telegram:{ANN}", session_id="s", action="add", content=STAGED)
    gw.telegram.message("/admin memory pending", user_id=ADMIN)
    [reply] = await gw.telegram.wait_messages(ADMIN, 1)
    assert reply.entities == []
    lines = reply.text.splitlines()
    assert [line for line in lines if line.startswith("#")] == [f"#1 add by telegram:{ANN}:"]
    assert (
        "│ #7 add by telegram:1000: *Approve this one* [the wiki](https://evil.example) `code`"
        in lines
    )

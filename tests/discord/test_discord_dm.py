"""Direct messages end to end through the runner, against the fake Discord."""

from __future__ import annotations

from tests.discord.conftest import ANN, DM_ANN, GatewayFactory


async def test_dm_conversation_end_to_end(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    fake, llm = gw.discord, gw.server
    llm.reply("Hello Ann! **How** can I help?")
    fake.message("hi there", author=ANN, channel_id=DM_ANN)
    [first] = await fake.wait_posted(DM_ANN, 1)
    assert first.content == "Hello Ann! **How** can I help?"
    assert first.reference is None
    assert fake.calls_of("POST", "/typing", status=None)

    llm.reply("You said you were there.")
    fake.message("where was I?", author=ANN, channel_id=DM_ANN)
    messages = await fake.wait_posted(DM_ANN, 2)
    assert messages[1].content == "You said you were there."
    users = [m["content"] for m in llm.requests[-1]["messages"] if m["role"] == "user"]
    assert users[-2:] == ["hi there", "where was I?"]
    assert gw.adapter.is_connected()

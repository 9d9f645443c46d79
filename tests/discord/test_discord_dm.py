"""Direct messages end to end through the runner, against the fake Discord."""

from __future__ import annotations

import logging

import pytest

from gateway import logs
from memory import log_content
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


async def test_a_message_cut_by_a_crash_is_answered_once_after_the_restart(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway()
    fake, llm = gw.discord, gw.server
    llm.reply("never delivered", delay=30)
    fake.message("what is 6 times 7?", author=ANN, channel_id=DM_ANN)
    await fake.wait_for(lambda: llm.in_flight == 1, what="the answer in progress")
    await gw.crash()

    llm.reply("Forty-two.")
    again = await make_gateway()
    [answer] = await fake.wait_posted(DM_ANN, 1)
    assert answer.content == "Forty-two."
    await again.settle()
    assert [p.content for p in fake.posted_in(DM_ANN)] == ["Forty-two."]


@pytest.mark.parametrize("content", [False, True])
async def test_sdk_debug_lines_carry_message_text_only_with_content_logging(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture, content: bool
) -> None:
    caplog.set_level(logging.DEBUG)
    logs.hold_library_loggers(True)  # released: the gateway's start decides
    log_content.enable(content)
    try:
        gw = await make_gateway()
        gw.server.reply("the answer is zebra-quartz-58")
        gw.discord.message("my pin is mauve-otter-91", author=ANN, channel_id=DM_ANN)
        await gw.discord.wait_posted(DM_ANN, 1)
    finally:
        log_content.enable(False)
        logs.hold_library_loggers(False)
    sdk_debug = [r for r in caplog.records if r.name.startswith(("discord", "openai"))]
    if content:
        assert "zebra-quartz-58" in caplog.text  # the SDK's own DEBUG lines are back
        assert any(r.levelno == logging.DEBUG for r in sdk_debug)
    else:
        assert "mauve-otter-91" not in caplog.text and "zebra-quartz-58" not in caplog.text
        assert all(r.levelno >= logging.INFO for r in sdk_debug)

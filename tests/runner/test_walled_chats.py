"""A chat the bot may not write to (blocked, no permission, archived): a calm log."""

from __future__ import annotations

import logging

import pytest

from gateway.adapters._walls import WALL_LOG_INTERVAL
from tests.fakes import FakeOpenAI
from tests.runner.conftest import GatewayFactory


def _walls(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if "cannot write in chat" in r.getMessage()]


async def test_a_walled_chat_is_one_warning_per_hour_and_no_apology(
    make_gateway: GatewayFactory, server: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    gw = await make_gateway()
    gw.adapter.walled.add("dm-2")
    for text in ("hello?", "anyone there?"):
        server.reply("An answer nobody will see.")
        await gw.say(text)
        await gw.settle()
    # one answer per message went to the wall, and nothing after it (no apology)
    assert [m.kind for m in gw.adapter.refused] == ["reply", "reply"]
    [warning] = _walls(caplog)
    assert warning.levelno == logging.WARNING and "dm-2" in warning.getMessage()
    assert not _errors(caplog)
    assert not [r for r in caplog.records if r.exc_info]

    await gw.clock.advance(WALL_LOG_INTERVAL + 1)
    server.reply("Still nobody.")
    await gw.say("and now?")
    await gw.settle()
    assert len(_walls(caplog)) == 2


async def test_a_notice_into_a_walled_chat_is_not_an_error(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    gw = await make_gateway()
    gw.adapter.walled.add("dm-2")
    await gw.say("/whoami")
    await gw.say("/new")
    await gw.settle()
    assert len(gw.adapter.refused) == 2
    assert len(_walls(caplog)) == 1
    assert not _errors(caplog)


def _errors(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """chorus's ERROR lines (asyncio may note here the tasks of an earlier test's fake
    servers, collected as garbage during this one)."""
    return [r for r in caplog.records if r.levelno >= logging.ERROR and r.name != "asyncio"]

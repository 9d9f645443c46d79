"""Notices to strangers, capped for all together: ``auth.stranger_notices_per_minute``."""

from __future__ import annotations

import asyncio
import logging
import re

import pytest

from gateway.access._texts import PRIVATE
from tests.runner.conftest import Gateway, GatewayFactory
from tests.waiting import until

CODE = re.compile(r"\b([A-HJ-NP-Z2-9]{8})\b")
CAP = 5
STRANGERS = 30


async def told(gw: Gateway, text: str, user: str, *, expect: bool = True) -> str:
    """What ``user`` is told, in their direct chat, for ``text`` ("" for nothing).

    ``expect``: an answer is awaited (the message may still be on its way when
    the sessions look quiet); without it, whatever came once they settled.
    """
    chat = f"dm-{user}"
    before = len(gw.adapter.texts(chat))
    await gw.say(text, user=user)
    if expect:
        await until(lambda: len(gw.adapter.texts(chat)) > before, what=f"an answer in {chat}")
    await gw.settle()
    after = gw.adapter.texts(chat)[before:]
    return "\n".join(after)


def held_back_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "held back" in r.getMessage()]


async def test_a_crowd_of_strangers_gets_at_most_the_cap_and_pairing_stays_reachable(
    make_gateway: GatewayFactory, caplog: pytest.LogCaptureFixture
) -> None:
    gw = await make_gateway(
        CHORUS_AUTH__POLICY="pairing",
        CHORUS_AUTH__STRANGER_NOTICES_PER_MINUTE=str(CAP),
        CHORUS_AUTH__RATE_LIMIT_PER_MINUTE="0",
    )
    strangers = [str(100 + n) for n in range(STRANGERS)]
    caplog.set_level(logging.INFO, logger="gateway.access")
    await asyncio.gather(*(gw.say("hello?", user=s) for s in strangers))
    await until(lambda: sum(1 for s in strangers if gw.adapter.texts(f"dm-{s}")) >= CAP)
    await gw.settle()
    answered = [s for s in strangers if gw.adapter.texts(f"dm-{s}")]
    assert len(answered) == CAP  # in this minute of the clock: the cap, no more
    assert all(CODE.search(gw.adapter.texts(f"dm-{s}")[0]) for s in answered)
    # one line says so, not one a message
    assert len(held_back_lines(caplog)) == 1

    await gw.clock.advance(30)  # still the same minute
    left_out = [s for s in strangers if s not in answered]
    await gw.say("anyone?", user=left_out[0])
    await gw.settle()
    assert gw.adapter.texts(f"dm-{left_out[0]}") == []
    assert len(held_back_lines(caplog)) == 1

    await gw.clock.advance(31)  # a minute later one held back asks again: a code comes
    reply = await told(gw, "hello again?", left_out[0])
    code = CODE.search(reply)
    assert code is not None, reply
    approved = await told(gw, f"/admin approve {code.group(1)}", "1")
    assert f"testchat:{left_out[0]}" in approved
    assert await told(gw, "now?", left_out[0]) == "ok"
    lines = held_back_lines(caplog)
    assert len(lines) == 2 and f"{STRANGERS - CAP} held back" in lines[1], lines


async def test_a_refusal_held_back_by_the_cap_is_given_after_the_minute(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(CHORUS_AUTH__STRANGER_NOTICES_PER_MINUTE="1")
    await gw.say("hi", user="200")
    await gw.say("hi", user="201")
    await until(lambda: gw.adapter.texts("dm-200"))
    await gw.settle()
    assert gw.adapter.texts("dm-200") == [PRIVATE.format(user_key="testchat:200")]
    assert gw.adapter.texts("dm-201") == []
    await gw.clock.advance(61)
    # the hour between two refusals to one person begins only with one given
    assert await told(gw, "hello?", "201") == PRIVATE.format(user_key="testchat:201")
    # answers to the people the bot serves are never counted
    assert await told(gw, "and me?", "2") == "ok"


async def test_a_native_command_answer_is_not_held_back_by_the_cap(
    make_gateway: GatewayFactory,
) -> None:
    """The platform shows a native command's answer itself: no send of ours to cap."""
    gw = await make_gateway(
        CHORUS_AUTH__POLICY="pairing", CHORUS_AUTH__STRANGER_NOTICES_PER_MINUTE="1"
    )
    assert CODE.search(await told(gw, "hello?", "300"))
    assert await told(gw, "hello?", "301", expect=False) == ""  # the cap is spent for this minute
    answer = await gw.adapter.command("/start", user_id="302")
    assert CODE.search(answer), answer

"""The inbound lane on its own: split pastes merged, order kept, nothing lost at stop."""

from __future__ import annotations

import asyncio

from gateway.adapters.telegram._intake import PASTE_THRESHOLD, Intake
from gateway.adapters.telegram._pacing import ChatPacer
from gateway.events import InboundMessage

LONG = "a" * PASTE_THRESHOLD


def msg(text: str, user: str = "1", chat: str = "1", n: int = 0) -> InboundMessage:
    return InboundMessage("telegram", chat, user, text, str(n), is_direct=chat == user)


class Recorder:
    def __init__(self) -> None:
        self.got: list[InboundMessage] = []

    async def __call__(self, message: InboundMessage) -> None:
        self.got.append(message)


async def _quiet(intake: Intake, recorder: Recorder, count: int) -> None:
    for _ in range(300):
        if len(recorder.got) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"only {len(recorder.got)} of {count} delivered")


async def test_a_paste_split_in_three_is_one_message() -> None:
    recorder = Recorder()
    intake = Intake(recorder, window=0.3)
    intake.put(msg(LONG, n=1))
    intake.put(msg(LONG, n=2))
    intake.put(msg("the end", n=3))
    await _quiet(intake, recorder, 1)
    [merged] = recorder.got
    assert merged.text == f"{LONG}\n{LONG}\nthe end"
    assert merged.message_id == "1"


async def test_a_lone_long_message_is_delivered_after_the_window() -> None:
    recorder = Recorder()
    intake = Intake(recorder, window=0.1)
    intake.put(msg(LONG))
    await asyncio.sleep(0.02)
    assert recorder.got == []
    await _quiet(intake, recorder, 1)
    assert recorder.got[0].text == LONG


async def test_other_people_and_commands_keep_their_order() -> None:
    recorder = Recorder()
    intake = Intake(recorder, window=5.0)
    intake.put(msg(LONG, user="1", chat="-5", n=1))
    intake.put(msg("hello from someone else", user="2", chat="-5", n=2))
    intake.put(msg("/stop", user="1", chat="-5", n=3))
    await _quiet(intake, recorder, 3)
    assert [m.message_id for m in recorder.got] == ["2", "1", "3"]


async def test_drain_delivers_what_is_held() -> None:
    recorder = Recorder()
    intake = Intake(recorder, window=60.0)
    intake.put(msg(LONG, chat="7", user="7"))
    intake.put(msg("short", chat="8", user="8"))
    await intake.drain(5)
    assert sorted(m.chat_id for m in recorder.got) == ["7", "8"]


async def test_chats_share_nothing_but_each_chat_has_one_budget() -> None:
    slept: list[float] = []
    clock = [0.0]

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock[0] += seconds

    pacer = ChatPacer(now=lambda: clock[0], sleep=sleep)
    for _ in range(3):  # the burst of a private chat
        await pacer.acquire("42")
    await pacer.acquire("43")
    assert slept == []
    await pacer.acquire("42")
    assert slept == [1.0]
    pacer.block("42", 5)
    assert pacer.blocked_for("42") == 5
    await pacer.acquire("42")
    assert clock[0] == 6.0
    assert pacer.blocked_for("43") == 0

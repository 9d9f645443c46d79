"""The inbound lane on its own: split pastes merged, order kept, nothing lost at stop."""

from __future__ import annotations

import asyncio

from gateway.adapters.telegram._intake import PASTE_THRESHOLD, Intake
from gateway.adapters.telegram._pacing import ChatPacer
from gateway.events import InboundMessage
from tests.fakes import FakeClock

LONG = "a" * PASTE_THRESHOLD


def msg(text: str, user: str = "1", chat: str = "1", n: int = 0) -> InboundMessage:
    return InboundMessage("telegram", chat, user, text, str(n), is_direct=chat == user)


class Recorder:
    def __init__(self) -> None:
        self.got: list[InboundMessage] = []

    async def __call__(self, message: InboundMessage) -> None:
        self.got.append(message)


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_a_paste_split_in_three_is_one_message() -> None:
    recorder, clock = Recorder(), FakeClock()
    intake = Intake(recorder, window=0.3, clock=clock)
    intake.put(msg(LONG, n=1))
    intake.put(msg(LONG, n=2))
    intake.put(msg("the end", n=3))
    await _settle()
    [merged] = recorder.got
    assert merged.text == f"{LONG}\n{LONG}\nthe end"
    assert merged.message_id == "1"


async def test_a_lone_long_message_is_delivered_when_its_window_ends() -> None:
    recorder, clock = Recorder(), FakeClock()
    intake = Intake(recorder, window=1.5, clock=clock)
    intake.put(msg(LONG))
    await _settle()
    await clock.advance(1.4)
    assert recorder.got == []
    await clock.advance(0.1)
    await _settle()
    assert [m.text for m in recorder.got] == [LONG]


async def test_a_long_continuation_restarts_the_window() -> None:
    recorder, clock = Recorder(), FakeClock()
    intake = Intake(recorder, window=1.0, clock=clock)
    intake.put(msg(LONG, n=1))
    await _settle()
    await clock.advance(0.9)
    intake.put(msg(LONG, n=2))
    await _settle()
    await clock.advance(0.9)
    assert recorder.got == []
    await clock.advance(0.1)
    await _settle()
    assert [m.text for m in recorder.got] == [f"{LONG}\n{LONG}"]


async def test_other_people_and_commands_keep_their_order() -> None:
    recorder, clock = Recorder(), FakeClock()
    intake = Intake(recorder, window=5.0, clock=clock)
    intake.put(msg(LONG, user="1", chat="-5", n=1))
    intake.put(msg("hello from someone else", user="2", chat="-5", n=2))
    intake.put(msg("/stop", user="1", chat="-5", n=3))
    await _settle()
    assert [m.message_id for m in recorder.got] == ["2", "1", "3"]


async def test_drain_delivers_what_is_held() -> None:
    recorder, clock = Recorder(), FakeClock()
    intake = Intake(recorder, window=60.0, clock=clock)
    intake.put(msg(LONG, chat="7", user="7"))
    intake.put(msg("short", chat="8", user="8"))
    await intake.drain(5)
    assert sorted(m.chat_id for m in recorder.got) == ["7", "8"]


async def test_a_slow_chat_does_not_hold_up_another() -> None:
    release = asyncio.Event()
    got: list[str] = []

    async def deliver(message: InboundMessage) -> None:
        if message.chat_id == "slow":
            await release.wait()
        got.append(message.message_id)

    intake = Intake(deliver, window=0, clock=FakeClock())
    intake.put(msg("one", chat="slow", user="slow", n=1))
    intake.put(msg("two", chat="slow", user="slow", n=2))
    intake.put(msg("three", chat="fast", user="fast", n=3))
    await _settle()
    assert got == ["3"]
    release.set()
    await _settle()
    assert got == ["3", "1", "2"]


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


async def test_waiting_for_the_budget_spends_nothing_and_typing_yields_to_messages() -> None:
    clock = [0.0]
    gate = asyncio.Event()

    async def sleep(seconds: float) -> None:
        await gate.wait()  # time stands still until the test lets it pass
        clock[0] += seconds

    pacer = ChatPacer(now=lambda: clock[0], sleep=sleep)
    assert pacer.has_spare()
    for n in range(30):  # the whole bot's burst, spent across chats
        await pacer.acquire(str(100 + n))
    assert not pacer.has_spare()
    clock[0] += 1.0  # the bucket refills by 30
    await pacer.wait_ready("7")
    await pacer.wait_ready("7")  # twice: waiting spent nothing
    assert pacer.has_spare()
    for n in range(30):
        await pacer.acquire(str(200 + n))
    waiter = asyncio.create_task(pacer.acquire("8"))
    await _settle()
    assert not waiter.done() and not pacer.has_spare()  # typing yields to the message
    gate.set()
    await waiter


async def test_messages_take_the_bots_budget_in_the_order_they_asked() -> None:
    clock = [0.0]

    async def sleep(seconds: float) -> None:
        await asyncio.sleep(0)
        clock[0] += seconds

    pacer = ChatPacer(now=lambda: clock[0], sleep=sleep)
    for n in range(30):
        await pacer.acquire(str(100 + n))
    served: list[str] = []

    async def send(chat: str) -> None:
        await pacer.acquire(chat)
        served.append(chat)

    chats = [str(500 + n) for n in range(10)]
    await asyncio.gather(*(send(chat) for chat in chats))
    assert served == chats

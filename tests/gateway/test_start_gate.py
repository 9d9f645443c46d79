"""StartGate: a burst's turns start a few at a time, in arrival order; a start ends when
its request to the model has left (the real openai client against the fake endpoint),
or after the window when it sends nothing."""

from __future__ import annotations

import asyncio

from agent.llm import LLMClient
from agent.settings import LLMSettings
from gateway.sessions._start_gate import StartGate
from tests.fakes import FakeOpenAI, Reply
from tests.waiting import until

HOUR = 3600.0


async def test_the_next_start_goes_once_the_first_request_has_left(server: FakeOpenAI) -> None:
    """One place, a window of an hour: the second turn starts while the first still
    waits for the model's answer, because its request was sent."""
    server.responder(lambda body: Reply.of_text("late", delay=30))
    client = LLMClient(LLMSettings(base_url=server.base_url, api_key=None))
    gate = StartGate(at_once=1, window=HOUR)
    second_in = asyncio.Event()

    async def first() -> None:
        async with gate.start():
            await client.complete([{"role": "user", "content": "hello"}])

    async def second() -> None:
        async with gate.start():
            second_in.set()

    answering = asyncio.create_task(first())
    await until(lambda: len(server.requests) == 1)
    waiting = asyncio.create_task(second())
    try:
        await asyncio.wait_for(second_in.wait(), timeout=20)
        assert not answering.done()  # the first turn still waits for its answer
    finally:
        answering.cancel()
        await asyncio.gather(answering, waiting, return_exceptions=True)
        await client.aclose()


async def test_a_start_that_sends_nothing_holds_its_place_only_for_the_window() -> None:
    gate = StartGate(at_once=1, window=0.05)
    stuck, second_in = asyncio.Event(), asyncio.Event()

    async def first() -> None:
        async with gate.start():
            await stuck.wait()  # a slow recall, say: no request yet

    async def second() -> None:
        async with gate.start():
            second_in.set()

    holding = asyncio.create_task(first())
    await asyncio.sleep(0)
    waiting = asyncio.create_task(second())
    await asyncio.wait_for(second_in.wait(), timeout=20)
    assert not holding.done()
    stuck.set()
    await asyncio.gather(holding, waiting)


async def test_starts_go_in_arrival_order_and_the_places_come_back() -> None:
    gate = StartGate(at_once=2, window=HOUR)
    order: list[int] = []
    inside = 0
    most = 0

    async def turn(n: int) -> None:
        nonlocal inside, most
        async with gate.start():
            inside += 1
            most = max(most, inside)
            order.append(n)
            await asyncio.sleep(0.01)
            inside -= 1

    await asyncio.gather(*(turn(n) for n in range(8)))
    assert order == list(range(8))
    assert most == 2
    await asyncio.gather(*(turn(n) for n in range(8, 10)))  # nothing was kept held
    assert order[-2:] == [8, 9]

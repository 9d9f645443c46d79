"""The per-step trace of a message (``agent.tracing.steps``): each step marked once, in
the order the message goes through them, only while a benchmark watches."""

from __future__ import annotations

from agent.tracing import steps
from tests.runner.conftest import GatewayFactory


async def test_a_watched_message_marks_every_step_in_order(make_gateway: GatewayFactory) -> None:
    gateway = await make_gateway()
    marks: list[tuple[str, int]] = []

    async def answered(text: str) -> str:
        reply = await gateway.ask(text)
        await gateway.settle()
        await gateway.runner.sessions.turns.drain(10)  # its settle is over too
        return reply.text

    await answered("before anyone watches")
    assert marks == []

    steps.watch(lambda name, at: marks.append((name, at)))
    try:
        assert await answered("hello")
    finally:
        steps.watch(None)
    assert [name for name, _ in marks] == list(steps.STEPS), marks
    times = [at for _, at in marks]
    assert times == sorted(times)

    marks.clear()
    await answered("after")
    assert marks == []  # off again: nothing is told

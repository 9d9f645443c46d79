"""A message that reached chorus is answered, or its sender told it was not — across a crash.

A crash here is the process state dropped without any shutdown work
(``close_without_ending``); the next gateway on the same home finds the durable
inbox. The real-process version (kill -9 of ``chorus gateway``) is in
tests/telegram/test_telegram_crash.py.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from gateway import adapters
from gateway.app import open_stack
from gateway.events import InboundMessage
from tests.fakes import FakeClock, FakeOpenAI, Reply
from tests.runner.conftest import (
    START,
    Gateway,
    GatewayFactory,
    close_without_ending,
    gateway_settings,
    user_messages,
)
from tests.waiting import until


async def in_flight(server: FakeOpenAI, count: int = 1) -> None:
    await until(lambda: server.in_flight >= count, what=f"{count} LLM request(s) in flight")


async def test_a_turn_cut_by_a_crash_is_answered_once_after_the_restart(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway()
    server.reply("never delivered", delay=30)
    await gw.say("what is the capital of Peru?", user="2")
    await in_flight(server)
    await close_without_ending(gw)

    server.reply("Lima.")
    again = await make_gateway()
    answer = await again.adapter.pop(20)
    assert answer.text == "Lima." and answer.chat_id == "dm-2"
    await again.settle()
    assert again.adapter.texts("dm-2") == ["Lima."]
    assert user_messages(server.last_request) == ["what is the capital of Peru?"]  # asked once
    [session] = again.stack.db.db.list_sessions(limit=5)
    stored = [m.content for m in again.stack.db.db.get_messages(session.id) if m.role == "user"]
    assert stored == ["what is the capital of Peru?"]

    third = await make_gateway()  # and only once: a later restart finds nothing pending
    await third.settle()
    assert third.adapter.sent == []


async def test_a_half_streamed_answer_is_finished_in_the_same_message(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway()
    server.push(Reply.of_text("The answer is forty two, of course.", stall_after=3, stall=60))
    await gw.say("the answer?", user="2")
    await until(
        lambda: gw.adapter.sent and gw.adapter.sent[0].text.startswith("The answer is"),
        what="the first streamed words",
    )
    frozen = gw.adapter.sent[0]
    # the crash comes after the gateway noted the message as shown (a kill between
    # the send and the note leaves a new message to send instead)
    await until(
        lambda: any(frozen.message_id in p.shown for p in gw.stack.inbox.pending("testchat")),
        what="the inbox to note the message as shown",
    )
    await close_without_ending(gw)

    server.reply("The answer is 42.")
    again = await make_gateway()
    again.adapter.sent.append(frozen)  # the chat still shows the frozen message
    finished = await again.adapter.pop(20)
    assert finished.message_id == frozen.message_id
    assert finished.text == "The answer is 42."
    assert [d.message_id for d in again.adapter.sent] == [frozen.message_id]


async def test_past_the_resume_age_the_sender_is_told_once(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway()
    server.reply("too late", delay=30)
    await gw.say("are you there?", user="2")
    await in_flight(server)
    await close_without_ending(gw)

    requests = len(server.requests)
    again = await make_gateway(FakeClock(START + 11 * 60))
    notice = await again.adapter.pop(20)
    assert "restarted" in notice.text and "ask again" in notice.text
    await again.settle()
    assert len(server.requests) == requests  # not answered
    third = await make_gateway(FakeClock(START + 12 * 60))
    await third.settle()
    assert third.adapter.sent == []  # told once


async def test_messages_waiting_behind_a_busy_turn_survive_the_crash_in_order(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway()
    server.reply("first, never delivered", delay=30)
    await gw.say("one", user="2")
    await in_flight(server)
    two = await gw.adapter.push("two", user_id="2")
    await gw.say("three", user="2")
    await close_without_ending(gw)

    server.responder(lambda body: Reply.of_text(f"echo {user_messages(body)[-1]}"))
    again = await make_gateway()
    answers = [await again.adapter.pop(20) for _ in range(2)]
    assert [a.text for a in answers] == ["echo one", "echo two\n\nthree"]  # merged, as before
    # the merged answer replies to the first message it covers (a single one to none: a DM)
    assert [a.reply_to for a in answers] == [None, two.message_id]


async def test_what_needs_no_answer_is_not_taken_up_again(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway()
    await gw.ask("/whoami", user="2")
    await gw.say("chatter", user="2", chat_id="g1", is_direct=False)  # not addressed
    await gw.ask("hello?", user="99")  # a stranger, refused
    await gw.ask("hi", user="2")
    await gw.settle()
    await close_without_ending(gw)

    requests = len(server.requests)
    again = await make_gateway()
    await again.settle()
    assert again.adapter.sent == [] and len(server.requests) == requests


async def test_two_messages_cut_mid_answer_keep_their_answers_after_the_restart(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    """Was: the answer to "two" overwritten in place by the answer to "three" (3 of 3):
    both had been noted as shown in the one message their merged answer streamed into."""
    gw = await make_gateway()
    server.reply("first", delay=1)
    # queued now: the next request may leave before the test would see "first"
    server.push(Reply.of_text("Two and three, answered together.", stall_after=3, stall=60))
    await gw.say("one", user="2")
    await in_flight(server)
    await gw.say("two", user="2")
    await gw.say("three", user="2")
    assert (await gw.adapter.pop(20)).text == "first"
    await until(lambda: len(gw.adapter.sent) == 2, what="the merged answer's first words")
    frozen = gw.adapter.sent[1]

    def noted() -> int:
        return sum(frozen.message_id in p.shown for p in gw.stack.inbox.pending("testchat"))

    await until(lambda: noted() == 2, what="both messages noted as shown")
    await close_without_ending(gw)

    server.responder(lambda body: Reply.of_text(f"echo {user_messages(body)[-1]}"))
    again = await make_gateway()
    again.adapter.sent.append(frozen)  # the chat still shows the frozen message
    await again.settle()
    await until(lambda: again.adapter.done_texts("dm-2"), what="the answers")
    shown = {d.message_id: d.text for d in again.adapter.sent}
    texts = sorted(shown.values())
    assert shown[frozen.message_id].startswith("echo")
    assert all(t.startswith("echo") for t in texts)
    assert "two" in " ".join(texts) and "three" in " ".join(texts)  # none overwritten


class ConnectingChat(adapters.TestChatAdapter):
    """A platform on which a person writes while the gateway is still starting: the
    message is recorded as the platform connects, before what a restart left is taken up."""

    def __init__(self) -> None:
        super().__init__()
        self.recorded = asyncio.Event()
        self.early: asyncio.Task[InboundMessage] | None = None

    async def connect(self) -> None:
        await super().connect()
        self.early = asyncio.create_task(self.push("what is the capital of Peru?", user_id="2"))
        await self.recorded.wait()

    async def deliver(self, msg: InboundMessage) -> None:
        self.recorded.set()  # recorded in the inbox; the runner takes it once it is open
        await super().deliver(msg)


async def test_a_message_arriving_during_the_start_is_answered_once_and_kept_until_then(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path
) -> None:
    server.reply("never delivered", delay=30)
    settings = gateway_settings(chorus_home, server)
    chorus_home.mkdir(mode=0o700, exist_ok=True)
    adapter = ConnectingChat()
    stack = await open_stack(settings, clock=FakeClock(START), adapters=[adapter])
    gw = Gateway(stack, adapter, FakeClock(START), server)
    await stack.start()
    await in_flight(server)
    await asyncio.sleep(0.2)  # the runner's intake, now open, has its look at it too
    assert server.in_flight == 1  # asked once
    # its delivery stays owed while it is being answered: a crash now loses nothing
    assert [p.payload for p in stack.inbox.pending("testchat")] != []
    await close_without_ending(gw)

    server.reply("Lima.")
    again = await make_gateway()
    answer = await again.adapter.pop(20)
    assert answer.text == "Lima." and answer.chat_id == "dm-2"
    await again.settle()
    assert again.adapter.texts("dm-2") == ["Lima."]

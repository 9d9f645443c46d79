"""Sessions through the runner: concurrency, busy handling, commands, expiry, eviction, restart."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.fakes import FakeClock, FakeOpenAI, Reply
from tests.integration.recorder_plugin import install_recorder, read_log
from tests.runner.conftest import (
    START,
    GatewayFactory,
    close_without_ending,
    user_messages,
)
from tests.waiting import until


def echo(delay: float = 0.0) -> Any:
    def answer(body: dict[str, Any]) -> Reply:
        return Reply.of_text(f"echo: {user_messages(body)[-1]}", delay=delay)

    return answer


async def test_fifty_sessions_concurrent_in_order_within_cap(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway(CHORUS_AUTH__POLICY="open", CHORUS_SESSIONS__MAX_CONCURRENT_TURNS="10")
    quick = echo(delay=0.05)

    def answer(body: dict[str, Any]) -> Reply:
        reply = quick(body)
        if (reply.text or "").endswith(" m0"):  # the first wave lasts long enough to fill the cap
            reply = Reply.of_text(reply.text, delay=1.0)
        return reply

    server.responder(answer)

    async def converse(user: int) -> None:
        for n in range(5):
            await gw.say(f"u{user} m{n}", user=str(100 + user))
            chat = f"dm-{100 + user}"
            answered = n + 1
            await until(
                lambda c=chat, a=answered: len(gw.adapter.done_texts(c)) >= a, 60, f"{chat} m{n}"
            )

    await asyncio.wait_for(asyncio.gather(*(converse(u) for u in range(50))), 120)
    for user in range(50):
        assert gw.adapter.texts(f"dm-{100 + user}") == [f"echo: u{user} m{n}" for n in range(5)]
    assert server.in_flight_max == 10  # concurrent, and never above the cap


async def test_busy_messages_are_merged_into_the_next_turn(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway()
    server.reply("first answer", delay=0.5)
    server.reply("merged answer")
    await gw.say("first", user="2")
    await until(lambda: server.requests, what="the first LLM request")
    await gw.say("second", user="2")
    await gw.say("third", user="2")
    assert (await gw.adapter.pop()).text == "first answer"
    assert (await gw.adapter.pop()).text == "merged answer"
    assert user_messages(server.requests[1])[-1] == "second\n\nthird"


async def test_interrupt_mode_cancels_the_running_turn(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway(CHORUS_SESSIONS__BUSY="interrupt")
    server.hang(30)
    server.reply("answer to the correction")
    await gw.say("long question", user="2")
    await until(lambda: server.requests, what="the first LLM request")
    await gw.say("actually, shorter", user="2")
    texts = [(await gw.adapter.pop()).text, (await gw.adapter.pop()).text]
    assert "(stopped)" in texts[0]
    assert texts[1] == "answer to the correction"
    assert user_messages(server.requests[-1])[-2:] == ["long question", "actually, shorter"]


async def test_stop_interrupts_and_history_stays_usable(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway()
    server.hang(30)
    await gw.say("tell me everything", user="2")
    await until(lambda: server.requests, what="the first LLM request")
    await gw.say("/stop", user="2")
    replies = {(await gw.adapter.pop()).text, (await gw.adapter.pop()).text}
    assert "Stopped." in replies
    server.reset()
    server.reply("fresh")
    assert (await gw.ask("ok then", user="2")).text == "fresh"


async def test_undo_retry_forget(make_gateway: GatewayFactory, server: FakeOpenAI) -> None:
    gw = await make_gateway()
    server.reply("answer A")
    await gw.ask("question A", user="2")
    server.reply("answer B")
    await gw.ask("question B", user="2")
    assert "Undone" in (await gw.ask("/undo", user="2")).text
    server.reply("answer C")
    await gw.ask("question C", user="2")
    assert user_messages(server.last_request) == ["question A", "question C"]

    server.reply("answer C again")
    assert (await gw.ask("/retry", user="2")).text == "answer C again"
    assert user_messages(server.last_request) == ["question A", "question C"]

    server.tool_calls(
        [
            ("memory", {"action": "add", "target": "user", "content": "Likes jazz"}),
            ("memory", {"action": "add", "target": "user", "content": "Lives in Lyon"}),
        ]
    )
    server.reply("noted")
    await gw.ask("I like jazz and live in Lyon", user="2")
    assert "Likes jazz" in (await gw.ask("/memory", user="2")).text
    assert "forgot" in (await gw.ask("/forget jazz", user="2")).text.lower()
    remaining = (await gw.ask("/memory", user="2")).text
    assert "Likes jazz" not in remaining and "Lives in Lyon" in remaining
    assert "1 entry" in (await gw.ask("/forget all", user="2")).text
    assert "don't remember" in (await gw.ask("/memory", user="2")).text


def ended(gw: Any) -> dict[str, str]:
    return {r.id: r.end_reason for r in gw.stack.db.db.list_sessions(limit=1000) if r.ended_at}


async def test_idle_expiry_ends_once_flushes_and_starts_fresh(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Any
) -> None:
    chorus_home.mkdir(mode=0o700)
    install_recorder(chorus_home)
    gw = await make_gateway(
        CHORUS_SESSIONS__IDLE_MINUTES="30",
        CHORUS_MEMORY__PROVIDER="recorder",
        CHORUS_MEMORY__FLUSH_MIN_TURNS="1",
    )
    server.reply("hi!")
    await gw.ask("I'm a night owl", user="2")
    first = gw.runner.sessions.sessions[0].session_id
    server.tool_call("memory", {"action": "add", "target": "user", "content": "Night owl"})
    server.reply("Short summary: night owl chat.")

    await gw.clock.advance(31 * 60)
    await gw.settle()
    assert ended(gw) == {first: "idle"}
    ends = [e for e in read_log(chorus_home) if e["hook"] == "on_session_end"]
    assert len(ends) == 1 and ends[0]["session"] == first and ends[0]["messages"] >= 2
    flushes = [
        r
        for r in server.requests
        if [t["function"]["name"] for t in r.get("tools", [])] == ["memory"]
    ]
    assert len(flushes) == 1

    server.reply("welcome back")
    await gw.say("morning", user="2")
    notice = await gw.adapter.pop()
    assert "fresh" in notice.text
    assert (await gw.adapter.pop()).text == "welcome back"
    system = server.last_request["messages"][0]["content"]
    assert "Night owl" in system
    assert "Short summary: night owl chat." in system  # the handoff
    assert user_messages(server.last_request) == ["morning"]
    await gw.clock.advance(5 * 60)
    await gw.settle()
    assert list(ended(gw).values()) == ["idle"]  # no second end


async def test_daily_reset(make_gateway: GatewayFactory, server: FakeOpenAI) -> None:
    from datetime import UTC, datetime

    clock = FakeClock(datetime(2026, 11, 30, 3, 30, tzinfo=UTC).timestamp())
    gw = await make_gateway(clock, CHORUS_SESSIONS__DAILY_RESET_HOUR="4")
    await gw.ask("late night", user="2")
    await gw.clock.advance(29 * 60)
    await gw.settle()
    assert ended(gw) == {}
    await gw.clock.advance(2 * 60)
    await gw.settle()
    assert list(ended(gw).values()) == ["daily_reset"]


async def test_expiry_waits_for_a_running_turn(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway(CHORUS_SESSIONS__IDLE_MINUTES="1")
    server.reply("slow answer", delay=0.5)
    await gw.say("go", user="2")
    await until(lambda: server.requests, what="the first LLM request")
    await gw.clock.advance(120)
    assert (await gw.adapter.pop()).text == "slow answer"  # not torn down
    await gw.clock.advance(120)
    await gw.settle()
    assert list(ended(gw).values()) == ["idle"]


async def test_eviction_rebuilds_from_the_transcript(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway(CHORUS_SESSIONS__MAX_LIVE="2")
    server.responder(echo())
    for user in ("2", "3", "4"):
        await gw.ask(f"remember {user}", user=user)
    assert gw.runner.sessions.live_agents == 2
    assert len(gw.runner.sessions.sessions) == 3
    await gw.ask("again", user="2")
    assert user_messages(server.last_request) == ["remember 2", "again"]
    assert ended(gw) == {}


async def test_restart_ends_sessions_past_their_deadline(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway(CHORUS_SESSIONS__IDLE_MINUTES="30")
    await gw.ask("before the crash", user="2")
    await gw.ask("also before", user="3")
    stale = {s.key.user_id: s.session_id for s in gw.runner.sessions.sessions}
    await gw.clock.advance(10 * 60)
    await gw.ask("still fresh", user="3")
    await close_without_ending(gw)

    clock = FakeClock(START + 35 * 60)
    again = await make_gateway(clock, CHORUS_SESSIONS__IDLE_MINUTES="30")
    await again.settle()
    assert ended(again) == {stale["2"]: "idle"}
    assert [s.session_id for s in again.runner.sessions.sessions] == [stale["3"]]
    server.reply("I remember")
    await again.ask("do you remember?", user="3")
    assert "still fresh" in json.dumps(server.last_request)


async def test_shutdown_finishes_turns_and_ends_every_session(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway()
    await gw.ask("hello", user="3")
    server.reply("finished anyway", delay=0.3)
    await gw.say("slow one", user="2")
    await until(lambda: len(server.requests) >= 2, what="two LLM requests")
    await gw.runner.shutdown(10)
    assert (await gw.adapter.pop()).text == "finished anyway"
    await gw.settle()
    assert sorted(ended(gw).values()) == ["shutdown", "shutdown"]
    await gw.say("anyone?", user="2")  # kept in the inbox, not answered "send that again"
    await gw.settle()
    assert gw.adapter.texts("dm-2")[-1] == "finished anyway"


async def test_recovery_leaves_other_platforms_sessions_alone(
    make_gateway: GatewayFactory,
) -> None:
    gw = await make_gateway(CHORUS_SESSIONS__IDLE_MINUTES="30")
    gw.stack.db.db.create_session(
        "tg-open", platform="telegram", user_key="telegram:9", started_at=START - 7200
    )
    await close_without_ending(gw)
    again = await make_gateway(FakeClock(START + 3600), CHORUS_SESSIONS__IDLE_MINUTES="30")
    await again.runner.shutdown(5)
    await again.settle()
    record = again.stack.db.db.get_session("tg-open")
    assert record is not None and record.ended_at is None


async def test_undo_survives_eviction(make_gateway: GatewayFactory, server: FakeOpenAI) -> None:
    gw = await make_gateway(CHORUS_SESSIONS__MAX_LIVE="1")
    server.responder(echo())
    await gw.ask("question A", user="2")
    await gw.ask("question B", user="2")
    assert "Undone" in (await gw.ask("/undo", user="2")).text
    await gw.ask("someone else", user="3")  # evicts user 2's agent
    assert gw.runner.sessions.live_agents == 1
    await gw.ask("question C", user="2")
    assert user_messages(server.last_request) == ["question A", "question C"]


async def test_eviction_never_drops_the_agent_about_to_answer(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway(CHORUS_SESSIONS__MAX_LIVE="1")
    server.reply("slow", delay=0.5)
    server.reply("quick")
    await gw.say("busy one", user="2")
    await until(lambda: server.requests, what="the first LLM request")
    await gw.say("another", user="3")  # user 2's agent is busy, user 3's is new
    texts = sorted([(await gw.adapter.pop()).text, (await gw.adapter.pop()).text])
    assert texts == ["quick", "slow"]


async def test_simultaneous_first_messages_open_one_session(
    make_gateway: GatewayFactory, server: FakeOpenAI
) -> None:
    gw = await make_gateway()
    server.responder(echo(delay=0.2))
    await asyncio.gather(gw.say("first", user="2"), gw.say("second", user="2"))
    await gw.adapter.pop()
    await gw.settle()
    assert len(gw.runner.sessions.sessions) == 1
    assert len({r.id for r in gw.stack.db.db.list_sessions(limit=10)}) == 1
    said = [text for request in server.requests for text in user_messages(request)]
    assert "first" in " ".join(said) and "second" in " ".join(said)

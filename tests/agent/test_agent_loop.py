"""The agent loop: tools, errors, retries, limits, streaming, nudges, caching, cancellation."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import openai
import pytest

from agent.agent import NUDGE
from agent.errors import LLMError
from agent.tools.registry import Tool, ToolRegistry
from memory.paths import ChorusPaths
from memory.providers import build_memory_context_block
from memory.transcripts import AsyncSessionDB
from tests.agent.conftest import MakeAgent, Sleeps, system_of, tool_results
from tests.fakes import FakeOpenAI, Reply
from tests.waiting import until


def last_user_content(request: dict[str, Any]) -> str:
    users = [m for m in request["messages"] if m["role"] == "user"]
    content = users[-1]["content"]
    return content if isinstance(content, str) else content[-1]["text"]


async def test_unknown_tool_and_bad_json_become_error_results(
    server: FakeOpenAI, make_agent: MakeAgent
) -> None:
    agent = await make_agent()
    server.tool_call("launch_rockets", {"count": 3})
    server.tool_call("memory", '{"action": "add", "target": ')
    server.reply("Sorry, I could not do that.")
    assert await agent.run_turn("do things") == "Sorry, I could not do that."
    results = tool_results(server.last_request)
    assert results[0]["success"] is False and "unknown tool" in results[0]["error"]
    assert results[1]["success"] is False and "not valid JSON" in results[1]["error"]


async def test_registered_tool_runs_and_failures_are_contained(
    server: FakeOpenAI, make_agent: MakeAgent
) -> None:
    agent = await make_agent()
    registry = ToolRegistry()
    registry.register(
        Tool("add", "Add two numbers.", {"type": "object"}, lambda a: str(a["x"] + a["y"]))
    )
    registry.register(Tool("boom", "Fails.", {"type": "object"}, lambda a: 1 / 0))  # type: ignore[arg-type,return-value]
    agent.tools = registry
    server.tool_calls([("add", {"x": 2, "y": 3}), ("boom", {})])
    server.reply("5")
    assert await agent.run_turn("2+3?") == "5"
    tools_offered = {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert tools_offered == {"memory", "session_search", "add", "boom"}
    tool_messages = [m for m in server.last_request["messages"] if m["role"] == "tool"]
    assert tool_messages[0]["content"] == "5"
    failure = json.loads(tool_messages[1]["content"])
    assert failure["success"] is False
    assert "ZeroDivision" not in failure["error"]


async def test_server_error_is_retried(
    server: FakeOpenAI, make_agent: MakeAgent, sleeps: Sleeps
) -> None:
    agent = await make_agent()
    server.error(500)
    server.reply("recovered")
    assert await agent.run_turn("hello") == "recovered"
    assert len(server.requests) == 2
    assert len(sleeps.delays) == 1


async def test_an_error_event_before_any_text_is_retried(
    server: FakeOpenAI, make_agent: MakeAgent, sleeps: Sleeps
) -> None:
    agent = await make_agent()
    server.push(Reply.of_text("never shown", error_after=0))
    server.reply("recovered")
    assert await agent.run_turn("hello") == "recovered"
    assert len(server.requests) == 2 and len(sleeps.delays) == 1


async def test_an_error_event_after_streamed_text_is_not_repeated(
    server: FakeOpenAI, make_agent: MakeAgent, sleeps: Sleeps
) -> None:
    """Text already shown to the person is not asked for again: the turn fails."""
    agent = await make_agent()
    shown: list[str] = []
    server.push(Reply.of_text("half an answer and then", error_after=2))
    with pytest.raises(LLMError):
        await agent.run_turn("hello", on_delta=shown.append)
    assert shown
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("header", "low", "high"),
    [("retry-after", 7.0, 7.0), ("retry-after-ms", 7.0, 7.0), ("retry-after-date", 5.0, 7.0)],
)
async def test_rate_limit_honours_retry_after(
    server: FakeOpenAI,
    make_agent: MakeAgent,
    sleeps: Sleeps,
    header: str,
    low: float,
    high: float,
) -> None:
    """A 429 waits what the server asks: Retry-After in seconds or as a date, or retry-after-ms."""
    agent = await make_agent()
    server.error(429, retry_after=7, retry_header=header)
    server.reply("fine")
    assert await agent.run_turn("hello") == "fine"
    assert len(server.requests) == 2
    [delay] = sleeps.delays
    assert low <= delay <= high


async def test_rate_limit_without_retry_after_backs_off(
    server: FakeOpenAI, make_agent: MakeAgent, sleeps: Sleeps
) -> None:
    agent = await make_agent()
    server.error(429, retry_after=None)
    server.reply("fine")
    assert await agent.run_turn("hello") == "fine"
    [delay] = sleeps.delays
    assert 0 < delay < 7


async def test_endpoint_down_fails_the_turn_and_keeps_the_message(
    server: FakeOpenAI, make_agent: MakeAgent, db: AsyncSessionDB, sleeps: Sleeps
) -> None:
    agent = await make_agent(session_id="down")
    server.error(503, times=3, retry_after=None)
    with pytest.raises(LLMError):
        await agent.run_turn("are you there?")
    assert len(server.requests) == 3  # one try + max_retries=2
    assert len(sleeps.delays) == 2 and sleeps.delays[1] > sleeps.delays[0] * 1.5
    stored = await db.get_messages("down")
    assert [m.content for m in stored] == ["are you there?"]
    server.reply("back now")
    assert await agent.run_turn("hello?") == "back now"
    users = [m["content"] for m in server.last_request["messages"] if m["role"] == "user"]
    assert users == ["are you there?", "hello?"]


async def test_unreachable_endpoint_fails_the_turn(make_agent: MakeAgent) -> None:
    agent = await make_agent(llm={"base_url": "http://127.0.0.1:9/v1", "max_retries": 1})
    with pytest.raises(LLMError):
        await agent.run_turn("hi")


async def test_refused_request_is_not_retried(server: FakeOpenAI, make_agent: MakeAgent) -> None:
    agent = await make_agent()
    server.error(401, "bad key")
    with pytest.raises(LLMError):
        await agent.run_turn("hi")
    assert len(server.requests) == 1


async def test_iteration_limit_gives_clear_message(
    server: FakeOpenAI, make_agent: MakeAgent
) -> None:
    agent = await make_agent(agent={"max_iterations": 3})
    server.responder(lambda body: Reply.of_tool_calls([("session_search", {"query": "loop"})]))
    answer = await agent.run_turn("loop forever")
    assert "3 steps" in answer
    assert len(server.requests) == 3
    history_roles = [m["role"] for m in agent.history]
    assert history_roles[-1] == "assistant"


async def test_streaming_deltas_arrive_in_pieces(server: FakeOpenAI, make_agent: MakeAgent) -> None:
    agent = await make_agent()
    server.reply("one two three four five")
    pieces: list[str] = []
    answer = await agent.run_turn("count", on_delta=pieces.append)
    assert answer == "one two three four five"
    assert len(pieces) >= 3
    assert "".join(pieces) == answer
    assert server.requests[0]["stream"] is True
    assert server.requests[0]["stream_options"] == {"include_usage": True}


async def test_the_request_is_the_one_the_openai_client_makes(
    server: FakeOpenAI, make_agent: MakeAgent
) -> None:
    """The body is encoded by chorus and posted through the client; the endpoint gets
    what the client's own ``chat.completions.create`` sends for the same arguments,
    with the client's auth."""
    server.api_key = "test"  # the key make_agent configures: a request without it is refused
    agent = await make_agent()
    server.reply("ok")
    assert await agent.run_turn('naïve café ✓ 日本, "quoted"\n') == "ok"
    ours = server.last_request
    assert ours["tools"] and ours["messages"][-1]["content"].startswith("naïve café ✓ 日本")
    client = openai.AsyncOpenAI(api_key="test", base_url=server.base_url, max_retries=0)
    try:
        stream = await client.chat.completions.create(
            model=ours["model"],
            messages=ours["messages"],
            tools=ours["tools"],
            stream=True,
            stream_options={"include_usage": True},
        )
        async for _ in stream:
            pass
    finally:
        await client.close()
    assert len(server.requests) == 2
    assert server.requests[0] == server.requests[1]


async def test_nudge_cadence(server: FakeOpenAI, make_agent: MakeAgent) -> None:
    agent = await make_agent(memory={"nudge_interval": 3})
    nudged: list[int] = []
    for turn in range(1, 10):
        if turn == 4:
            server.tool_call("memory", {"action": "add", "target": "user", "content": "likes owls"})
        server.reply("ok")
        await agent.run_turn(f"message {turn}")
        if NUDGE in last_user_content(server.last_request):
            nudged.append(turn)
    # turns 3 and (after the write at 4 resets the counter) 7
    assert nudged == [3, 7]


async def test_nudge_disabled(server: FakeOpenAI, make_agent: MakeAgent) -> None:
    agent = await make_agent(memory={"nudge_interval": 0})
    for turn in range(5):
        await agent.run_turn(f"m{turn}")
    assert all(NUDGE not in json.dumps(r) for r in server.requests)


def markers(request: dict[str, Any]) -> list[int]:
    found = []
    for index, message in enumerate(request["messages"]):
        content = message.get("content")
        parts = content if isinstance(content, list) else []
        if "cache_control" in message or any("cache_control" in p for p in parts):
            found.append(index)
    return found


async def test_cache_control_system_and_3(server: FakeOpenAI, make_agent: MakeAgent) -> None:
    agent = await make_agent(model="claude-sonnet")
    for turn in range(3):
        server.reply(f"answer {turn}")
        await agent.run_turn(f"question {turn}")
    request = server.last_request
    count = len(request["messages"])
    assert markers(request) == [0, count - 3, count - 2, count - 1]
    assert request["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    # the stored history keeps plain strings
    assert all(isinstance(m.get("content"), str) for m in agent.history)


@pytest.mark.parametrize(
    ("model", "setting", "expected"),
    [
        ("gpt-4o", "auto", False),
        ("anthropic/claude-3", "auto", True),
        ("gpt-4o", "on", True),
        ("claude-x", "off", False),
    ],
)
async def test_cache_control_setting(
    server: FakeOpenAI, make_agent: MakeAgent, model: str, setting: str, expected: bool
) -> None:
    agent = await make_agent(model=model, llm={"prompt_caching": setting})
    await agent.run_turn("hi")
    assert bool(markers(server.last_request)) is expected


async def test_cancel_during_tool_leaves_consistent_history(
    server: FakeOpenAI, make_agent: MakeAgent, db: AsyncSessionDB
) -> None:
    agent = await make_agent(session_id="cancel-me")
    entered = asyncio.Event()

    async def slow(arguments: dict[str, Any]) -> str:
        entered.set()
        await asyncio.Event().wait()
        return "never"

    registry = ToolRegistry()
    registry.register(Tool("slow", "Takes forever.", {"type": "object"}, slow))
    agent.tools = registry
    server.tool_calls([("slow", {}), ("slow", {})])
    task = asyncio.create_task(agent.run_turn("do the slow thing"))
    await asyncio.wait_for(entered.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    calls = [c["id"] for m in agent.history for c in m.get("tool_calls") or []]
    answered = [m["tool_call_id"] for m in agent.history if m["role"] == "tool"]
    assert len(calls) == 2 and sorted(calls) == sorted(answered)
    stored = await db.get_messages("cancel-me")
    assert [m.role for m in stored] == ["user", "assistant", "tool", "tool"]

    server.reply("ok, stopped")
    assert await agent.run_turn("never mind") == "ok, stopped"  # the endpoint accepted it


async def test_cancel_while_waiting_for_llm(server: FakeOpenAI, make_agent: MakeAgent) -> None:
    agent = await make_agent()
    server.hang(30)
    task = asyncio.create_task(agent.run_turn("slow question"))
    await until(lambda: server.requests, what="the LLM request")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [m["role"] for m in agent.history] == ["user"]
    server.reset()
    server.reply("here")
    assert await agent.run_turn("again") == "here"


async def test_timeout_counts_as_unavailable(
    server: FakeOpenAI, make_agent: MakeAgent, sleeps: Sleeps
) -> None:
    agent = await make_agent(llm={"timeout_seconds": 0.2, "max_retries": 1})
    server.hang(30)
    server.hang(30)
    with pytest.raises(LLMError):
        await agent.run_turn("anyone?")
    assert len(server.requests) == 2
    assert len(sleeps.delays) == 1


async def test_images_go_to_the_model_and_the_transcript_notes_them(
    server: FakeOpenAI, make_agent: MakeAgent, db: AsyncSessionDB
) -> None:
    from agent.compressor import estimate_tokens
    from agent.context import ImageInput

    agent = await make_agent(session_id="pics")
    big = ImageInput(b"\x89PNG" + b"x" * 400_000, "image/png")
    server.reply("a picture")
    assert await agent.run_turn("look", images=[big]) == "a picture"
    content = server.last_request["messages"][-1]["content"]
    assert content[0] == {"type": "text", "text": "look"}
    assert content[1]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
    stored = await db.get_messages("pics")
    assert stored[0].content == "look\n[1 image(s)]"
    assert estimate_tokens(agent.history) < 2_000  # an image is not counted by its base64


async def test_a_nudge_goes_with_its_turns_image_message_and_no_later_turn(
    server: FakeOpenAI, make_agent: MakeAgent
) -> None:
    from agent.context import ImageInput

    agent = await make_agent(memory={"nudge_interval": 1})
    server.reply("a picture")
    await agent.run_turn("look", images=[ImageInput(b"\x89PNG" + b"x" * 64, "image/png")])
    content = server.last_request["messages"][-1]["content"]
    assert content[0] == {"type": "text", "text": f"look\n\n{NUDGE}"}
    assert content[1]["type"] == "image_url"
    server.reply("ok")
    await agent.run_turn("and now?")
    earlier = next(m for m in server.last_request["messages"] if m["role"] == "user")
    assert earlier["content"][0] == {"type": "text", "text": "look"}
    assert earlier["content"][1] == content[1]
    assert server.last_request["messages"][-1]["content"] == f"and now?\n\n{NUDGE}"


async def test_recalled_context_echoed_by_the_model_never_reaches_the_chat(
    server: FakeOpenAI, make_agent: MakeAgent
) -> None:
    agent = await make_agent()
    echoed = build_memory_context_block("Bob's diagnosis is private")
    server.reply(f"Here is what I know: {echoed} Nothing more.")
    pieces: list[str] = []
    answer = await agent.run_turn("what do you know?", on_delta=pieces.append)
    streamed = "".join(pieces)
    assert len(pieces) >= 3  # it did stream
    for shown in (streamed, answer, agent.history[-1]["content"]):
        assert "diagnosis" not in shown and "memory-context" not in shown
    assert answer.startswith("Here is what I know:") and answer.endswith("Nothing more.")
    assert streamed.startswith("Here is what I know:") and streamed.endswith("Nothing more.")


async def test_turns_reuse_one_connection_to_the_endpoint(
    server: FakeOpenAI, make_agent: MakeAgent
) -> None:
    """A streamed answer is read to its end, so its connection serves the next call
    (no new TCP and TLS set-up per turn)."""
    agent = await make_agent()
    for n in range(3):
        server.reply(f"answer {n}")
        assert await agent.run_turn(f"question {n}") == f"answer {n}"
    assert len(server.connections) == 3
    assert len(set(server.connections)) == 1


async def test_the_request_leaves_while_the_message_is_written_and_the_transcript_keeps_order(
    tmp_path: Path, server: FakeOpenAI, make_agent: MakeAgent
) -> None:
    """The turn's request does not wait for the commit of the person's message (another
    connection holds the database's write lock meanwhile); the answer is written after it."""
    agent = await make_agent()
    server.reply("ok")
    blocker = sqlite3.connect(ChorusPaths(tmp_path).state_db, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")  # every other writer waits (up to its busy timeout)
        turn = asyncio.create_task(agent.run_turn("hello there"))
        await until(lambda: len(server.requests) == 1, timeout=3, what="the request")
        assert server.last_request["messages"][-1] == {"role": "user", "content": "hello there"}
        assert not turn.done()  # its answer waits for the message's write
        blocker.execute("COMMIT")
        assert await turn == "ok"
        rows = blocker.execute(
            "SELECT role, content FROM messages WHERE session_id = ? ORDER BY id",
            (agent.session.session_id,),
        ).fetchall()
    finally:
        blocker.close()
    assert rows == [("user", "hello there"), ("assistant", "ok")]


async def test_a_fresh_session_asks_while_it_is_opened_and_is_stored_before_its_turn(
    tmp_path: Path, server: FakeOpenAI, make_agent: MakeAgent
) -> None:
    """A session made just now is opened in the database while its first request is made
    (another connection holds the write lock); its row, with the prompt the request
    used, is written before the turn's messages."""
    agent = await make_agent(start=False)
    server.reply("ok")
    blocker = sqlite3.connect(ChorusPaths(tmp_path).state_db, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        await asyncio.wait_for(agent.start(fresh=True), 3)  # nothing of it to read back
        turn = asyncio.create_task(agent.run_turn("hello there"))
        await until(lambda: len(server.requests) == 1, timeout=3, what="the request")
        assert not turn.done()
        blocker.execute("COMMIT")
        assert await turn == "ok"
        sid = agent.session.session_id
        [(prompt,)] = blocker.execute("SELECT system_prompt FROM sessions WHERE id = ?", (sid,))
        rows = blocker.execute(
            "SELECT role, content FROM messages WHERE session_id = ? ORDER BY id", (sid,)
        ).fetchall()
    finally:
        blocker.close()
    assert prompt == agent.system_prompt == system_of(server.requests[0])
    assert rows == [("user", "hello there"), ("assistant", "ok")]


async def test_a_session_that_is_not_fresh_is_read_back_before_its_turn(
    server: FakeOpenAI, make_agent: MakeAgent
) -> None:
    """Without ``fresh`` the agent waits for its opening: a session resumed by its id
    answers with the history it had."""
    first = await make_agent()
    server.reply("noted")
    await first.run_turn("my name is Ada")
    again = await make_agent(session_id=first.session.session_id)
    server.reply("Ada")
    assert await again.run_turn("who am I?") == "Ada"
    asked = [m["content"] for m in server.last_request["messages"] if m["role"] == "user"]
    assert asked == ["my name is Ada", "who am I?"]

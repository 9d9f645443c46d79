"""The fake OpenAI server, exercised through the real ``openai`` clients."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import openai
import pytest

from tests.fakes import FakeOpenAI, Reply

MESSAGES: list[Any] = [{"role": "user", "content": "hi"}]


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def async_client(server: FakeOpenAI, **kwargs: Any) -> openai.AsyncOpenAI:
    kwargs.setdefault("max_retries", 0)
    return openai.AsyncOpenAI(base_url=server.base_url, api_key="test", **kwargs)


def sync_client(server: FakeOpenAI, **kwargs: Any) -> openai.OpenAI:
    kwargs.setdefault("max_retries", 0)
    return openai.OpenAI(base_url=server.base_url, api_key="test", **kwargs)


@pytest.fixture
async def aclient(server: FakeOpenAI) -> AsyncIterator[openai.AsyncOpenAI]:
    async with async_client(server) as client:
        yield client


@pytest.fixture
def client(server: FakeOpenAI) -> Iterator[openai.OpenAI]:
    with sync_client(server) as client:
        yield client


def test_base_url_and_models(server: FakeOpenAI, client: openai.OpenAI) -> None:
    assert server.base_url.startswith("http://127.0.0.1:")
    assert server.base_url.endswith("/v1")
    models = client.models.list()
    assert [m.id for m in models.data] == [server.model]


def test_sync_non_streaming_text(server: FakeOpenAI, client: openai.OpenAI) -> None:
    server.reply("Hello there", usage={"prompt_tokens": 7, "completion_tokens": 2})
    result = client.chat.completions.create(model="gpt-test", messages=MESSAGES)
    choice = result.choices[0]
    assert choice.message.content == "Hello there"
    assert choice.message.role == "assistant"
    assert choice.finish_reason == "stop"
    assert result.model == "gpt-test"
    assert result.usage is not None
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (7, 2)
    assert result.usage.total_tokens == 9


async def test_async_non_streaming_text_and_default(
    server: FakeOpenAI, aclient: openai.AsyncOpenAI
) -> None:
    server.reply("scripted")
    first = await aclient.chat.completions.create(model="m", messages=MESSAGES)
    second = await aclient.chat.completions.create(model="m", messages=MESSAGES)
    assert first.choices[0].message.content == "scripted"
    assert second.choices[0].message.content == "ok"
    server.default_reply = "fallback"
    third = await aclient.chat.completions.create(model="m", messages=MESSAGES)
    assert third.choices[0].message.content == "fallback"


async def test_async_non_streaming_tool_calls(
    server: FakeOpenAI, aclient: openai.AsyncOpenAI
) -> None:
    server.tool_calls([("get_weather", {"city": "Paris"}), ("get_time", '{"tz": "UTC"}')])
    result = await aclient.chat.completions.create(model="m", messages=MESSAGES)
    choice = result.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls or []
    assert [c.function.name for c in calls] == ["get_weather", "get_time"]  # type: ignore[union-attr]
    assert json.loads(calls[0].function.arguments) == {"city": "Paris"}  # type: ignore[union-attr]
    assert calls[1].function.arguments == '{"tz": "UTC"}'  # type: ignore[union-attr]
    assert calls[0].id != calls[1].id


async def test_streaming_text_arrives_in_several_chunks(
    server: FakeOpenAI, aclient: openai.AsyncOpenAI
) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    server.reply(text)
    stream = await aclient.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    deltas: list[str] = []
    finish: list[str | None] = []
    async for chunk in stream:
        assert chunk.object == "chat.completion.chunk"
        assert chunk.usage is None
        for choice in chunk.choices:
            if choice.delta.content:
                deltas.append(choice.delta.content)
            finish.append(choice.finish_reason)
    assert "".join(deltas) == text
    assert len(deltas) >= 5
    assert finish[-1] == "stop"


async def test_a_dropped_stream_ends_mid_body(
    server: FakeOpenAI, aclient: openai.AsyncOpenAI
) -> None:
    """``drop_after``: the chunks so far arrive, then the connection closes before the
    body's end — the client's read fails (httpx ``RemoteProtocolError``), no ``[DONE]``."""
    server.push(Reply.of_text("The quick brown fox jumps over the lazy dog.", drop_after=3))
    stream = await aclient.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    deltas: list[str] = []
    with pytest.raises(openai.APIConnectionError):
        async for chunk in stream:
            deltas.extend(c.delta.content or "" for c in chunk.choices)
    assert "".join(deltas) == "The quick"


def test_sync_streaming_text(server: FakeOpenAI, client: openai.OpenAI) -> None:
    server.reply("one two three")
    stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    pieces = [c.choices[0].delta.content or "" for c in stream if c.choices]
    assert "".join(pieces) == "one two three"
    assert len([p for p in pieces if p]) == 3


async def test_streaming_tool_call_arguments_reassembled(
    server: FakeOpenAI, aclient: openai.AsyncOpenAI
) -> None:
    arguments = {"query": "weather in Paris tomorrow", "limit": 3}
    server.tool_call("search", arguments, call_id="call_abc", text="Let me look.")
    stream = await aclient.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    content = ""
    name = ""
    call_id = None
    fragments: list[str] = []
    finish = None
    async for chunk in stream:
        for choice in chunk.choices:
            content += choice.delta.content or ""
            for call in choice.delta.tool_calls or []:
                assert call.index == 0
                if call.id:
                    call_id = call.id
                    assert call.type == "function"
                if call.function and call.function.name:
                    name += call.function.name
                if call.function and call.function.arguments:
                    fragments.append(call.function.arguments)
            if choice.finish_reason:
                finish = choice.finish_reason
    assert content == "Let me look."
    assert (call_id, name) == ("call_abc", "search")
    assert len(fragments) > 1
    assert json.loads("".join(fragments)) == arguments
    assert finish == "tool_calls"


async def test_streaming_several_tool_calls_and_invalid_arguments(
    server: FakeOpenAI, aclient: openai.AsyncOpenAI
) -> None:
    server.tool_calls([("a", {"x": 1}), ("b", "{not json")])
    stream = await aclient.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    args: dict[int, str] = {}
    names: dict[int, str] = {}
    async for chunk in stream:
        for choice in chunk.choices:
            for call in choice.delta.tool_calls or []:
                if call.function and call.function.name:
                    names[call.index] = call.function.name
                if call.function and call.function.arguments:
                    args[call.index] = args.get(call.index, "") + call.function.arguments
    assert names == {0: "a", 1: "b"}
    assert json.loads(args[0]) == {"x": 1}
    assert args[1] == "{not json"


async def test_include_usage_final_chunk(server: FakeOpenAI, aclient: openai.AsyncOpenAI) -> None:
    usage = {"prompt_tokens": 11, "completion_tokens": 3, "cached_tokens": 4, "reasoning_tokens": 2}
    server.reply("counted words here", usage=usage)
    stream = await aclient.chat.completions.create(
        model="m", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    chunks = [chunk async for chunk in stream]
    assert all(c.usage is None for c in chunks[:-1])
    last = chunks[-1]
    assert last.choices == []
    assert last.usage is not None
    assert last.usage.prompt_tokens == 11
    assert last.usage.completion_tokens == 3
    assert last.usage.total_tokens == 14
    assert last.usage.prompt_tokens_details is not None
    assert last.usage.prompt_tokens_details.cached_tokens == 4
    assert last.usage.completion_tokens_details is not None
    assert last.usage.completion_tokens_details.reasoning_tokens == 2


async def test_no_usage_chunk_without_include_usage(aclient: openai.AsyncOpenAI) -> None:
    stream = await aclient.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    chunks = [chunk async for chunk in stream]
    assert all(c.choices for c in chunks)


async def test_scripted_500_raises_without_retries(
    server: FakeOpenAI, aclient: openai.AsyncOpenAI
) -> None:
    server.error(500, "boom")
    with pytest.raises(openai.InternalServerError) as info:
        await aclient.chat.completions.create(model="m", messages=MESSAGES)
    assert info.value.status_code == 500
    assert "boom" in str(info.value)
    assert isinstance(info.value.body, dict)
    assert info.value.body["type"] == "server_error"


async def test_client_retries_past_one_500(server: FakeOpenAI) -> None:
    server.error(500)
    server.reply("recovered")
    async with async_client(server, max_retries=2) as client:
        result = await client.chat.completions.create(model="m", messages=MESSAGES)
    assert result.choices[0].message.content == "recovered"
    assert len(server.requests) == 2
    assert server.pending == 0


def test_error_times_and_rate_limit(server: FakeOpenAI, client: openai.OpenAI) -> None:
    server.error(429, "Rate limit reached", times=2)
    for _ in range(2):
        with pytest.raises(openai.RateLimitError) as info:
            client.chat.completions.create(model="m", messages=MESSAGES)
        assert info.value.code == "rate_limit_exceeded"
    ok = client.chat.completions.create(model="m", messages=MESSAGES)
    assert ok.choices[0].message.content == "ok"


async def test_requests_recorded_in_order(server: FakeOpenAI, aclient: openai.AsyncOpenAI) -> None:
    for word in ("first", "second", "third"):
        await aclient.chat.completions.create(
            model="m", messages=[{"role": "user", "content": word}], temperature=0.5
        )
    assert [r["messages"][0]["content"] for r in server.requests] == ["first", "second", "third"]
    assert server.last_request["temperature"] == 0.5
    assert server.last_request["model"] == "m"


async def test_concurrent_requests_seen_in_flight(
    server: FakeOpenAI, aclient: openai.AsyncOpenAI
) -> None:
    for _ in range(3):
        server.hang(0.3)
    results = await asyncio.gather(
        *(aclient.chat.completions.create(model="m", messages=MESSAGES) for _ in range(3))
    )
    assert [r.choices[0].message.content for r in results] == ["ok"] * 3
    assert server.in_flight_max == 3


async def test_hang_triggers_client_timeout(server: FakeOpenAI) -> None:
    server.hang(2)
    async with async_client(server, timeout=0.2) as client:
        with pytest.raises(openai.APITimeoutError):
            await client.chat.completions.create(model="m", messages=MESSAGES)


async def test_responder_echoes_when_queue_empty(
    server: FakeOpenAI, aclient: openai.AsyncOpenAI
) -> None:
    def echo(body: dict[str, Any]) -> Reply:
        return Reply.of_text("echo: " + body["messages"][-1]["content"])

    server.responder(echo)
    server.reply("scripted first")
    first = await aclient.chat.completions.create(model="m", messages=MESSAGES)
    second = await aclient.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "ping"}]
    )
    assert first.choices[0].message.content == "scripted first"
    assert second.choices[0].message.content == "echo: ping"


async def test_request_validation(server: FakeOpenAI, aclient: openai.AsyncOpenAI) -> None:
    server.reply("never sent")
    url = server.base_url + "/chat/completions"
    async with aiohttp.ClientSession() as http:
        async with http.post(url, json={"messages": MESSAGES}) as no_model:
            assert no_model.status == 400
            assert (await no_model.json())["error"]["param"] == "model"
        async with http.post(url, json={"model": "m"}) as no_messages:
            assert no_messages.status == 400
            assert (await no_messages.json())["error"]["param"] == "messages"
        headers = {"content-type": "application/json"}
        async with http.post(url, data=b"{oops", headers=headers) as bad_json:
            assert bad_json.status == 400
        async with http.get(server.base_url + "/nope") as unknown:
            assert unknown.status == 404
            assert (await unknown.json())["error"]["code"] == "unknown_url"
    with pytest.raises(openai.BadRequestError):
        await aclient.chat.completions.create(model="", messages=MESSAGES)
    assert server.pending == 1


def test_api_key_enforced_when_configured() -> None:
    with FakeOpenAI(api_key="secret") as server:
        with sync_client(server) as wrong, pytest.raises(openai.AuthenticationError):
            wrong.chat.completions.create(model="m", messages=MESSAGES)
        with openai.OpenAI(base_url=server.base_url, api_key="secret", max_retries=0) as right:
            assert right.chat.completions.create(model="m", messages=MESSAGES).choices


def test_stop_releases_hanging_request() -> None:
    server = FakeOpenAI().start()
    server.hang(30)
    with sync_client(server, timeout=0.2) as client, pytest.raises(openai.APITimeoutError):
        client.chat.completions.create(model="m", messages=MESSAGES)
    server.stop()
    server.stop()

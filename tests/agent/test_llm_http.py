"""The HTTP under the openai client (``agent.llm_http``): the SDK's aiohttp transport,
which reports each request as sent to the task that made it, names a refused
connection a connection error, and still goes through a proxy named in the
environment. The real openai client against the fake endpoint and a forward proxy
speaking plain HTTP/1.1 (RFC 9112's absolute-form request target)."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator

import pytest

from agent import sending
from agent.errors import LLMUnavailable
from agent.llm import LLMClient
from agent.settings import LLMSettings
from tests.fakes import FakeOpenAI, Reply
from tests.waiting import until

ASK = [{"role": "user", "content": "hello"}]


def client_of(base_url: str) -> LLMClient:
    return LLMClient(LLMSettings(base_url=base_url, api_key=None, max_retries=0))


async def test_a_request_tells_its_own_task_once_it_is_sent(server: FakeOpenAI) -> None:
    """Two turns ask at once; only the one under ``when_sent`` hears of its request, once,
    and before its answer came (the model holds it back)."""
    server.responder(lambda body: Reply.of_text("late", delay=1.0))
    llm = client_of(server.base_url)
    told: list[int] = []
    answered = asyncio.Event()

    async def watched() -> None:
        def sent() -> None:
            told.append(len(server.requests))
            assert not answered.is_set()

        with sending.when_sent(sent):
            await llm.complete(ASK)
        answered.set()

    try:
        await asyncio.gather(watched(), llm.complete(ASK))
    finally:
        await llm.aclose()
    assert len(told) == 1
    assert len(server.requests) == 2


async def test_a_refused_connection_is_a_connection_error_not_a_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The SDK's aiohttp table makes every aiohttp connection error a ``ConnectTimeout``;
    a port nobody listens on must read as what it is."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm = client_of(f"http://127.0.0.1:{port}/v1")
    try:
        with caplog.at_level(logging.WARNING, logger="agent"), pytest.raises(LLMUnavailable):
            await llm.complete(ASK)
    finally:
        await llm.aclose()
    assert "APIConnectionError (ConnectError)" in caplog.text
    assert "Timeout" not in caplog.text


class ForwardProxy:
    """An HTTP forward proxy: it reads each request (absolute-form target), records its
    request line and relays it to the origin named in it, and the answer back."""

    def __init__(self) -> None:
        self.request_lines: list[str] = []
        self._server: asyncio.Server | None = None

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                line, *fields = head.decode("latin-1").split("\r\n")
                self.request_lines.append(line)
                method, target, version = line.split(" ")
                headers = dict(f.split(": ", 1) for f in fields if f)
                lowered = {k.lower(): v for k, v in headers.items()}
                body = await reader.readexactly(int(lowered.get("content-length", "0")))
                origin, _, path = target.removeprefix("http://").partition("/")
                host, port = origin.split(":")
                up_reader, up_writer = await asyncio.open_connection(host, int(port))
                kept = {k: v for k, v in headers.items() if not k.lower().startswith("proxy-")}
                kept["Connection"] = "close"
                up_writer.write(
                    f"{method} /{path} {version}\r\n".encode()
                    + "".join(f"{k}: {v}\r\n" for k, v in kept.items()).encode()
                    + b"\r\n"
                    + body
                )
                answer = await up_reader.read()  # the origin closes after its answer
                up_writer.close()
                writer.write(answer)
                await writer.drain()
                writer.close()
                return
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


@pytest.fixture
async def proxy() -> AsyncIterator[tuple[ForwardProxy, str]]:
    relay = ForwardProxy()
    url = await relay.start()
    yield relay, url
    await relay.close()


async def test_a_proxy_named_in_the_environment_carries_the_request(
    server: FakeOpenAI,
    proxy: tuple[ForwardProxy, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    relay, url = proxy
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", url)
    server.reply("through the proxy")
    llm = client_of(server.base_url)
    try:
        answer = await llm.complete(ASK)
    finally:
        await llm.aclose()
    assert answer.content == "through the proxy"
    await until(lambda: len(relay.request_lines) == 1)
    assert relay.request_lines[0].startswith(f"POST {server.base_url}/chat/completions ")

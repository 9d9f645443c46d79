"""The gateway HTTP server as a probe or Prometheus sees it: a real server on a free port."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from gateway.ops import HTTPServer, Metrics

Readiness = Callable[[], Awaitable[dict[str, bool]]]


def checks(**results: bool) -> Readiness:
    async def readiness() -> dict[str, bool]:
        return dict(results)

    return readiness


async def raising_readiness() -> dict[str, bool]:
    raise ConnectionError("redis://:hunter2@db:6379 refused")


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.fixture
async def servers() -> AsyncIterator[Callable[..., Awaitable[HTTPServer]]]:
    started: list[HTTPServer] = []

    async def start(
        metrics: Metrics | None = None,
        readiness: Readiness | None = None,
        routes: list[tuple[str, str, Any]] | None = None,
        readiness_timeout: float = 5.0,
    ) -> HTTPServer:
        server = HTTPServer(
            "127.0.0.1",
            0,
            metrics=metrics or Metrics(),
            readiness=readiness or checks(),
            readiness_timeout=readiness_timeout,
        )
        for method, path, handler in routes or []:
            server.add_route(method, path, handler)
        await server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        await server.stop()


async def get_json(http: aiohttp.ClientSession, url: str) -> tuple[int, Any]:
    async with http.get(url) as response:
        assert response.content_type == "application/json"
        return response.status, await response.json()


async def scrape(http: aiohttp.ClientSession, server: HTTPServer) -> str:
    async with http.get(f"{server.url}/metrics") as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return await response.text()


async def test_healthz_answers_ok(servers: Any, http: aiohttp.ClientSession) -> None:
    server = await servers()
    assert server.port != 0
    assert await get_json(http, f"{server.url}/healthz") == (200, {"status": "ok"})


async def test_readyz_is_200_when_every_check_passes(
    servers: Any, http: aiohttp.ClientSession
) -> None:
    server = await servers(readiness=checks(llm=True, redis=True))
    status, body = await get_json(http, f"{server.url}/readyz")
    assert status == 200
    assert body == {"ready": True, "checks": {"llm": True, "redis": True}}


async def test_readyz_is_503_naming_the_failing_check(
    servers: Any, http: aiohttp.ClientSession
) -> None:
    server = await servers(readiness=checks(llm=True, redis=False))
    status, body = await get_json(http, f"{server.url}/readyz")
    assert status == 503
    assert body == {"ready": False, "checks": {"llm": True, "redis": False}}


async def test_readyz_is_503_when_the_check_raises_without_leaking_its_text(
    servers: Any, http: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="gateway.ops")
    server = await servers(readiness=raising_readiness)
    async with http.get(f"{server.url}/readyz") as response:
        text = await response.text()
        assert response.status == 503
    assert '"ready": false' in text
    assert "hunter2" not in text
    assert "hunter2" not in caplog.text
    assert "ConnectionError" in caplog.text


async def test_readyz_is_503_when_the_check_hangs(
    servers: Any, http: aiohttp.ClientSession
) -> None:
    never = asyncio.Event()

    async def hanging() -> dict[str, bool]:
        await never.wait()
        return {"redis": True}

    server = await servers(readiness=hanging, readiness_timeout=0.1)
    status, body = await get_json(http, f"{server.url}/readyz")
    assert status == 503
    assert body["ready"] is False
    # The server is still responsive after the timed-out check.
    assert (await get_json(http, f"{server.url}/healthz"))[0] == 200


async def test_metrics_exposes_counters_histograms_and_live_gauges(
    servers: Any, http: aiohttp.ClientSession
) -> None:
    metrics = Metrics(live_sessions=lambda: 7)
    metrics.set_sources(
        queue_status=lambda: (3, 1, 2),
        adapters=lambda: {"telegram": True, "discord": False},
    )
    metrics.message_in("telegram")
    metrics.message_in("telegram")
    metrics.observe_turn(1.5)
    metrics.session_ended("idle")
    metrics.tokens("prompt", 10)
    server = await servers(metrics=metrics)

    text = await scrape(http, server)

    assert 'chorus_messages_in_total{platform="telegram"} 2.0' in text
    assert 'chorus_turn_seconds_bucket{le="1.0"} 0.0' in text
    assert 'chorus_turn_seconds_bucket{le="2.0"} 1.0' in text
    assert 'chorus_turn_seconds_bucket{le="+Inf"} 1.0' in text
    assert "chorus_turn_seconds_count 1.0" in text
    assert 'chorus_sessions_ended_total{reason="idle"} 1.0' in text
    assert 'chorus_tokens_total{kind="prompt"} 10.0' in text
    assert "chorus_live_sessions 7.0" in text
    assert "chorus_queue_depth 3.0" in text
    assert "chorus_failed_jobs 1.0" in text
    assert "chorus_outbox_jobs 2.0" in text
    assert 'chorus_adapter_up{platform="telegram"} 1.0' in text
    assert 'chorus_adapter_up{platform="discord"} 0.0' in text


async def test_gauges_follow_live_state_at_each_scrape(
    servers: Any, http: aiohttp.ClientSession
) -> None:
    state = {"discord": True}
    metrics = Metrics(adapters=lambda: dict(state))
    server = await servers(metrics=metrics)
    assert 'chorus_adapter_up{platform="discord"} 1.0' in await scrape(http, server)
    state["discord"] = False
    assert 'chorus_adapter_up{platform="discord"} 0.0' in await scrape(http, server)


async def test_a_raising_source_does_not_break_the_scrape(
    servers: Any, http: aiohttp.ClientSession
) -> None:
    def broken() -> int:
        raise RuntimeError("session store is gone")

    metrics = Metrics(live_sessions=broken, adapters=lambda: {"slack": True})
    metrics.message_out("slack")
    server = await servers(metrics=metrics)

    text = await scrape(http, server)

    assert "chorus_live_sessions " not in text
    assert 'chorus_adapter_up{platform="slack"} 1.0' in text
    assert 'chorus_messages_out_total{platform="slack"} 1.0' in text


def test_two_instances_do_not_share_values() -> None:
    first, second = Metrics(), Metrics()
    first.message_in("discord")
    first.tokens("completion", 4)
    assert b'chorus_messages_in_total{platform="discord"} 1.0' in first.render()[0]
    assert b'platform="discord"' not in second.render()[0]
    assert second.snapshot()["tokens_completion"] == 0.0


def test_snapshot_sums_counters_for_admin_stats() -> None:
    metrics = Metrics()
    metrics.message_in("telegram")
    metrics.message_in("slack")
    metrics.message_out("slack")
    metrics.llm_error()
    metrics.session_ended("idle")
    metrics.session_ended("reset")
    metrics.tokens("prompt", 100)
    metrics.tokens("cached", 40)
    metrics.command("new", "ok")
    metrics.rejected("not_allowed")
    metrics.observe_llm(0.3)

    stats = metrics.snapshot()

    assert stats["messages_in"] == 2.0
    assert stats["messages_out"] == 1.0
    assert stats["llm_errors"] == 1.0
    assert stats["sessions_ended"] == 2.0
    assert stats["tokens_prompt"] == 100.0
    assert stats["tokens_cached"] == 40.0
    assert stats["tokens_completion"] == 0.0
    assert stats["tokens_reasoning"] == 0.0
    assert stats["commands"] == 1.0
    assert stats["rejected_messages"] == 1.0


def test_unknown_token_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="token kind"):
        Metrics().tokens("input", 1)


async def test_add_route_mounts_a_webhook(servers: Any, http: aiohttp.ClientSession) -> None:
    received: list[Any] = []

    async def webhook(request: web.Request) -> web.Response:
        received.append(await request.json())
        return web.json_response({"ok": True})

    server = await servers(routes=[("POST", "/telegram/webhook", webhook)])
    async with http.post(f"{server.url}/telegram/webhook", json={"update_id": 1}) as response:
        assert response.status == 200
        assert await response.json() == {"ok": True}
    assert received == [{"update_id": 1}]


async def test_add_route_after_start_is_refused(servers: Any) -> None:
    async def webhook(request: web.Request) -> web.Response:
        return web.Response()

    server = await servers()
    with pytest.raises(RuntimeError, match="started"):
        server.add_route("POST", "/slack/events", webhook)


async def test_unknown_path_is_404_json(servers: Any, http: aiohttp.ClientSession) -> None:
    server = await servers()
    assert await get_json(http, f"{server.url}/nope") == (404, {"error": "not found"})


async def test_wrong_method_is_405_json(servers: Any, http: aiohttp.ClientSession) -> None:
    server = await servers()
    async with http.post(f"{server.url}/healthz") as response:
        assert response.status == 405
        assert response.content_type == "application/json"
        assert "GET" in response.headers["Allow"]


async def test_stop_twice_is_fine_and_frees_the_port(http: aiohttp.ClientSession) -> None:
    server = HTTPServer("127.0.0.1", 0, metrics=Metrics(), readiness=checks())
    await server.stop()
    await server.start()
    url = server.url
    await server.stop()
    await server.stop()
    with pytest.raises(aiohttp.ClientConnectionError):
        async with http.get(f"{url}/healthz"):
            pass


@pytest.mark.parametrize(
    "raw",
    [
        b"GET /healthz?pin=4711" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pin: 4711" + b"b" * 9000 + b"\r\n\r\n",
        b"GET /healthz?pin=4711 HTTP/9.9\r\nHost: x\r\n\r\n",
    ],
)
async def test_an_unparseable_request_is_refused_without_quoting_it(
    servers: Any, caplog: pytest.LogCaptureFixture, raw: bytes
) -> None:
    caplog.set_level(logging.DEBUG)
    server = await servers()
    for _ in range(5):
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(raw)
        await writer.drain()
        answer = await reader.read()
        writer.close()
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.") and b" 400 " in head.split(b"\r\n")[0]
        assert b"4711" not in answer and json.loads(body) == {"error": "bad request"}
    assert "4711" not in caplog.text
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert len([r for r in caplog.records if "could not be parsed" in r.getMessage()]) == 1


async def test_a_metrics_address_serves_metrics_and_probes_there_only(
    http: aiohttp.ClientSession,
) -> None:
    async def hook(request: web.Request) -> web.Response:
        return web.json_response({"hooked": True})

    server = HTTPServer(
        "127.0.0.1",
        0,
        metrics=Metrics(),
        readiness=checks(),
        metrics_address=("127.0.0.1", 0),
    )
    server.add_route("POST", "/hook", hook)
    await server.start()
    try:
        assert server.metrics_port != server.port
        for path in ("/healthz", "/readyz"):
            assert (await get_json(http, f"{server.metrics_url}{path}"))[0] == 200
            assert await get_json(http, f"{server.url}{path}") == (404, {"error": "not found"})
        async with http.get(f"{server.metrics_url}/metrics") as response:
            assert response.status == 200
        assert (await get_json(http, f"{server.url}/metrics"))[0] == 404
        async with http.post(f"{server.url}/hook") as response:
            assert (response.status, await response.json()) == (200, {"hooked": True})
        async with http.post(f"{server.metrics_url}/hook") as response:
            assert response.status == 404
    finally:
        await server.stop()
    with pytest.raises(aiohttp.ClientConnectionError):
        await http.get(f"{server.metrics_url}/healthz")

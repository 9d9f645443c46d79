"""The service around the runner: HTTP probes and metrics, SIGTERM shutdown."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import aiohttp

from gateway.adapters import TestChatAdapter
from gateway.app import run_gateway
from gateway.ops import HTTPServer
from memory.paths import ChorusPaths
from memory.transcripts import SessionDB
from tests.fakes import FakeOpenAI
from tests.runner.conftest import GatewayFactory, gateway_settings
from tests.waiting import until


async def test_health_readiness_and_metrics(make_gateway: GatewayFactory) -> None:
    gw = await make_gateway()
    http = HTTPServer("127.0.0.1", 0, metrics=gw.stack.metrics, readiness=gw.stack.readiness)
    await http.start()
    try:
        await gw.ask("hello", user="2")
        await gw.ask("/admin nope", user="3")
        async with aiohttp.ClientSession() as client:
            async with client.get(f"{http.url}/healthz") as response:
                assert response.status == 200
            async with client.get(f"{http.url}/readyz") as response:
                body = await response.json()
                assert response.status == 200, body
                assert body["checks"] == {
                    "accepting": True,
                    "adapter:testchat": True,
                    "session_db": True,
                    "storage": True,
                }
            async with client.get(f"{http.url}/metrics") as response:
                text = await response.text()
            assert 'chorus_messages_in_total{platform="testchat"} 2.0' in text
            assert 'chorus_messages_out_total{platform="testchat"} 2.0' in text
            assert "chorus_live_sessions 1.0" in text
            assert 'chorus_adapter_up{platform="testchat"} 1.0' in text
            assert 'chorus_commands_total{command="admin",outcome="refused"} 1.0' in text
            assert "chorus_turn_seconds_count 1.0" in text
            assert "chorus_queue_depth 0.0" in text
            assert "chorus_llm_seconds_count 1.0" in text
            assert "chorus_llm_errors_total 0.0" in text
            gw.adapter.connected = False
            async with client.get(f"{http.url}/readyz") as response:
                body = await response.json()
                assert response.status == 503
                assert body["checks"]["adapter:testchat"] is False
    finally:
        await http.stop()


async def test_sigterm_finishes_turns_ends_sessions_exits_zero(
    chorus_home: Path, server: FakeOpenAI
) -> None:
    chorus_home.mkdir(mode=0o700)
    settings = gateway_settings(chorus_home, server, CHORUS_GATEWAY__HTTP__PORT="0")
    adapter = TestChatAdapter()
    service = asyncio.create_task(run_gateway(settings, adapters=[adapter]))
    await until(lambda: adapter.started, 60, "the adapter to start")
    await adapter.push("quick", user_id="3")
    assert (await adapter.pop()).text == "ok"
    server.reply("done despite the shutdown", delay=0.5)
    await adapter.push("slow", user_id="2")
    await until(lambda: len(server.requests) >= 2, what="two LLM requests")
    os.kill(os.getpid(), signal.SIGTERM)
    assert await asyncio.wait_for(service, 60) == 0
    assert (await adapter.pop()).text == "done despite the shutdown"
    with SessionDB(ChorusPaths(chorus_home).state_db) as db:
        records = db.list_sessions(limit=10)
    assert len(records) == 2
    assert all(r.end_reason == "shutdown" for r in records)

"""`chorus gateway` with ``gateway.metrics.port``: a real process whose webhook port
serves only webhooks, its metrics and probes on their own listener."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from importlib.metadata import version
from pathlib import Path

from tests.fakes import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram
from tests.scrape import samples, value
from tests.telegram.conftest import ANN
from tests.telegram.test_telegram_process import CHORUS, free_port, gateway_env, get, wait_ready

WEBHOOK_PATH = "/telegram/webhook"


async def test_metrics_and_probes_answer_only_on_the_metrics_port(
    chorus_home: Path, server: FakeOpenAI, telegram: FakeTelegram
) -> None:
    chorus_home.mkdir(mode=0o700)
    port, metrics_port = free_port(), free_port()
    env = gateway_env(chorus_home, server, telegram, port)
    env.update(
        {
            "CHORUS_GATEWAY__METRICS__PORT": str(metrics_port),
            "CHORUS_TELEGRAM__WEBHOOK_URL": f"http://127.0.0.1:{port}{WEBHOOK_PATH}",
            "CHORUS_TELEGRAM__WEBHOOK_SECRET": "metrics-port-test",
        }
    )
    proc = subprocess.Popen(
        [str(CHORUS), "gateway"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        await wait_ready(metrics_port)
        server.reply("Answered by webhook.")
        telegram.message("hi", user_id=ANN)  # the fake posts it to the webhook URL
        [reply] = await telegram.wait_messages(ANN, 1)
        assert reply.text == "Answered by webhook."
        assert telegram.webhook_deliveries[-1][1] == 200

        status, metrics = await asyncio.to_thread(get, f"http://127.0.0.1:{metrics_port}/metrics")
        assert status == 200
        assert 'chorus_messages_in_total{platform="telegram"} 1.0' in metrics
        for path in ("/healthz", "/readyz"):
            status, _ = await asyncio.to_thread(get, f"http://127.0.0.1:{metrics_port}{path}")
            assert status == 200, path
        for path in ("/metrics", "/healthz", "/readyz"):
            status, body = await asyncio.to_thread(get, f"http://127.0.0.1:{port}{path}")
            assert (status, body) == (404, '{"error": "not found"}'), path
        status, _ = await asyncio.to_thread(get, f"http://127.0.0.1:{metrics_port}{WEBHOOK_PATH}")
        assert status == 404  # and no webhook on the metrics listener

        proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.to_thread(proc.communicate, timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.decode(errors="replace")[-2000:]


async def test_a_gateway_exports_its_process_its_build_and_counters_from_zero(
    chorus_home: Path, server: FakeOpenAI, telegram: FakeTelegram
) -> None:
    chorus_home.mkdir(mode=0o700)
    port, metrics_port = free_port(), free_port()
    env = gateway_env(chorus_home, server, telegram, port)
    env["CHORUS_GATEWAY__METRICS__PORT"] = str(metrics_port)
    proc = subprocess.Popen(
        [str(CHORUS), "gateway"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        await wait_ready(metrics_port)
        status, text = await asyncio.to_thread(get, f"http://127.0.0.1:{metrics_port}/metrics")
        assert status == 200
        found = samples(text)
        for name in (
            "process_resident_memory_bytes",
            "process_cpu_seconds_total",
            "process_open_fds",
            "process_max_fds",
            "process_start_time_seconds",
            "python_gc_objects_collected_total",
            "python_gc_collections_total",
            "python_info",
        ):
            assert any(key[0] == name for key in found), name
        assert value(found, "chorus_build_info", version=version("chorus")) == 1.0
        # labelled counters start at 0 for what is known, so rate() sees the first event
        assert value(found, "chorus_messages_in_total", platform="telegram") == 0
        assert value(found, "chorus_messages_out_total", platform="telegram") == 0
        for reason in ("idle", "daily_reset", "new", "admin", "shutdown"):
            assert value(found, "chorus_sessions_ended_total", reason=reason) == 0
        for reason in ("duplicate", "rate_limited", "too_long"):
            assert value(found, "chorus_rejected_messages_total", reason=reason) == 0
        assert value(found, "chorus_commands_total", command="new", outcome="ok") == 0
        assert not [key for key in found if key[0].endswith("_created")]
        proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.to_thread(proc.communicate, timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.decode(errors="replace")[-2000:]

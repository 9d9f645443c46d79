"""`chorus gateway` with ``gateway.metrics.port``: a real process whose webhook port
serves only webhooks, its metrics and probes on their own listener."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from pathlib import Path

from tests.fakes import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram
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

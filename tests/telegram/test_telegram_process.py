"""`chorus gateway` as an operator runs it: a real process on Telegram, probed and stopped."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from memory.paths import ChorusPaths
from memory.transcripts import SessionDB
from tests.fakes import FakeOpenAI
from tests.fakes.telegram_api import FakeTelegram
from tests.telegram.conftest import ANN

CHORUS = Path(sys.executable).with_name("chorus")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


async def test_gateway_process_serves_probes_and_stops_on_sigterm(
    chorus_home: Path, server: FakeOpenAI, telegram: FakeTelegram
) -> None:
    chorus_home.mkdir(mode=0o700)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
    env.update(
        {
            "CHORUS_HOME": str(chorus_home),
            "OPENAI_BASE_URL": server.base_url,
            "TELEGRAM_BOT_TOKEN": telegram.token,
            "CHORUS_TELEGRAM__BASE_URL": telegram.base_url,
            "CHORUS_TELEGRAM__BASE_FILE_URL": telegram.base_file_url,
            "CHORUS_AUTH__ALLOWED_USERS": f"telegram:{ANN}",
            "CHORUS_GATEWAY__HTTP__PORT": str(port),
            "CHORUS_LOG_LEVEL": "DEBUG",
            "PTB_TIMEDELTA": "1",
        }
    )
    proc = subprocess.Popen(
        [str(CHORUS), "gateway"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        health = f"http://127.0.0.1:{port}"
        for _ in range(300):
            await asyncio.sleep(0.05)
            try:
                status, body = await asyncio.to_thread(get, f"{health}/readyz")
            except OSError:
                continue
            if status == 200:
                break
        assert status == 200, body
        assert '"adapter:telegram": true' in body

        server.reply("Hello from the service.")
        telegram.message("hi", user_id=ANN)
        [reply] = await telegram.wait_messages(ANN, 1)
        assert reply.text == "Hello from the service."
        status, metrics = await asyncio.to_thread(get, f"{health}/metrics")
        assert 'chorus_messages_in_total{platform="telegram"} 1.0' in metrics

        proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.to_thread(proc.communicate, timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.decode(errors="replace")[-2000:]
    logs = err.decode(errors="replace")
    assert telegram.token not in logs and "sk-" not in logs
    with SessionDB(ChorusPaths(chorus_home).state_db) as db:
        [record] = db.list_sessions(limit=5)
    assert record.end_reason == "shutdown"

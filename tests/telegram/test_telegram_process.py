"""`chorus gateway` as an operator runs it: a real process on Telegram, probed and stopped."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from memory.paths import ChorusPaths
from memory.transcripts import SessionDB
from tests.fakes import FakeOpenAI, Reply
from tests.fakes.telegram_api import FakeTelegram
from tests.telegram.conftest import ANN
from tests.waiting import until

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
        await wait_ready(port)
        status, body = await ready(port)
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


def gateway_env(
    home: Path, server: FakeOpenAI, telegram: FakeTelegram, port: int
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
    env.update(
        {
            "CHORUS_HOME": str(home),
            "OPENAI_BASE_URL": server.base_url,
            "TELEGRAM_BOT_TOKEN": telegram.token,
            "CHORUS_TELEGRAM__BASE_URL": telegram.base_url,
            "CHORUS_TELEGRAM__BASE_FILE_URL": telegram.base_file_url,
            "CHORUS_AUTH__POLICY": "open",
            "CHORUS_GATEWAY__HTTP__PORT": str(port),
            "CHORUS_MEMORY__FLUSH_MIN_TURNS": "1",
            "PTB_TIMEDELTA": "1",
        }
    )
    return env


async def ready(port: int) -> tuple[int, str]:
    """``GET /readyz``: its status and body; (0, why) when nothing answers yet."""
    try:
        return await asyncio.to_thread(get, f"http://127.0.0.1:{port}/readyz")
    except OSError as exc:
        return 0, str(exc)


async def wait_ready(port: int, timeout: float = 60.0) -> None:
    """Until the gateway on ``port`` reports ready (the start-up of a loaded machine included)."""

    async def is_ready() -> bool:
        return (await ready(port))[0] == 200

    await until(is_ready, timeout, f"the gateway on port {port} to become ready", poll=0.05)


async def test_sigterm_with_busy_sessions_exits_within_the_bound_and_ends_each_once(
    chorus_home: Path, server: FakeOpenAI, telegram: FakeTelegram
) -> None:
    """8 answers in progress against a slow LLM: SIGTERM exits within
    ``gateway.shutdown_timeout`` (plus process start-up margins), and every session
    ends exactly once with reason ``shutdown`` — now, or at the next start."""
    chorus_home.mkdir(mode=0o700)
    port = free_port()
    env = gateway_env(chorus_home, server, telegram, port)
    env["CHORUS_GATEWAY__SHUTDOWN_TIMEOUT"] = "3"
    server.responder(lambda body: Reply.of_text("a slow answer", delay=20))
    proc = subprocess.Popen([str(CHORUS), "gateway"], env=env, stderr=subprocess.PIPE)
    try:
        await wait_ready(port)
        users = [7000 + n for n in range(8)]
        for user in users:
            telegram.message(f"take your time, {user}", user_id=user)
        await telegram.wait_for(lambda: server.in_flight == 8, what="8 answers in progress")
        proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.to_thread(proc.communicate, timeout=3 + 12)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.decode(errors="replace")[-2000:]
    with SessionDB(ChorusPaths(chorus_home).state_db) as db:
        records = db.list_sessions(limit=50)
    assert len(records) == 8
    assert {r.end_reason for r in records} == {"shutdown"}  # recorded, ended or not yet

    server.responder(lambda body: Reply.of_text("answered after the restart", delay=0))
    again = subprocess.Popen([str(CHORUS), "gateway"], env=env, stderr=subprocess.PIPE)
    try:
        await wait_ready(port)
        for user in users:  # the answers cut by the shutdown are given now, once each
            [answer] = await telegram.wait_messages(user, 1, timeout=30)
            assert answer.text == "answered after the restart"
        again.send_signal(signal.SIGTERM)
        await asyncio.to_thread(again.communicate, timeout=30)
    finally:
        if again.poll() is None:
            again.kill()
            again.wait()
    with SessionDB(ChorusPaths(chorus_home).state_db) as db:
        records = db.list_sessions(limit=50)
    assert all(len(telegram.in_chat(user)) == 1 for user in users)
    assert len(records) == 16  # the 8 cut short, and the 8 that answered after the restart
    assert all(r.ended_at is not None and r.end_reason == "shutdown" for r in records)


async def test_json_logs_one_object_a_line_with_session_and_platform_and_no_secrets(
    chorus_home: Path, server: FakeOpenAI, telegram: FakeTelegram
) -> None:
    chorus_home.mkdir(mode=0o700)
    port = free_port()
    env = gateway_env(chorus_home, server, telegram, port)
    env.update(
        {
            "CHORUS_LOG_FORMAT": "json",
            "CHORUS_LOG_LEVEL": "DEBUG",
            "OPENAI_API_KEY": "sk-json-log-secret-1234",
        }
    )
    proc = subprocess.Popen([str(CHORUS), "gateway"], env=env, stderr=subprocess.PIPE)
    try:
        await wait_ready(port)
        server.reply("logged")
        telegram.message("please keep this out of the log", user_id=ANN)
        await telegram.wait_messages(ANN, 1)
        proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.to_thread(proc.communicate, timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    text = err.decode()
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    assert lines and all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    with SessionDB(ChorusPaths(chorus_home).state_db) as db:
        [record] = db.list_sessions(limit=5)
    in_session = [line for line in lines if line.get("session") == record.id]
    assert in_session and all(line["platform"] == "telegram" for line in in_session)
    assert telegram.token not in text and "sk-json-log-secret-1234" not in text
    assert "please keep this out of the log" not in text  # content only with CHORUS_LOG_CONTENT

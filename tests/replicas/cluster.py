"""Several real ``chorus gateway --replica-id`` processes and ``chorus worker`` processes.

They share one redis-server and one PostgreSQL database (``redis.url``,
``database.url``); each replica has its own HTTP port and its own
CHORUS_HOME (as pods would), the fake Telegram posts its webhook updates to
the replicas in turn, as a load balancer in front of them would. Nothing is
shared on disk but the test's recorder plugin (installed in every home).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.fakes import FakeOpenAI
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_requests import SIGNING_SECRET
from tests.fakes.telegram_api import FakeTelegram
from tests.waiting import until

CHORUS = Path(sys.executable).with_name("chorus")
SECRET = "webhook-secret-1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


@dataclass
class Process:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path
    port: int | None = None

    def kill(self) -> None:
        """SIGKILL: no shutdown work of any kind."""
        self.proc.kill()
        self.proc.wait(timeout=10)

    def stop(self, timeout: float = 30) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@dataclass
class Cluster:
    root: Path
    redis_url: str
    database_url: str
    llm: FakeOpenAI
    telegram: FakeTelegram
    slack: FakeSlack | None = None
    """When set, every replica also serves Slack's Events API over HTTP."""
    env: dict[str, str] = field(default_factory=dict)
    processes: list[Process] = field(default_factory=list)

    def home(self, name: str) -> Path:
        home = self.root / name
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        return home

    def environment(self, home: Path, port: int) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
        env.update(
            {
                "CHORUS_HOME": str(home),
                "OPENAI_BASE_URL": self.llm.base_url,
                "OPENAI_API_KEY": "sk-test",
                "TELEGRAM_BOT_TOKEN": self.telegram.token,
                "CHORUS_TELEGRAM__BASE_URL": self.telegram.base_url,
                "CHORUS_TELEGRAM__BASE_FILE_URL": self.telegram.base_file_url,
                "CHORUS_TELEGRAM__WEBHOOK_URL": "https://bot.example.org/telegram/webhook",
                "CHORUS_TELEGRAM__WEBHOOK_SECRET": SECRET,
                "CHORUS_AUTH__POLICY": "open",
                "CHORUS_MEMORY__NUDGE_INTERVAL": "0",
                "CHORUS_GATEWAY__HTTP__PORT": str(port),
                "CHORUS_REDIS__URL": self.redis_url,
                "DATABASE_URL": self.database_url,
                "CHORUS_LOG_LEVEL": "INFO",
                "PTB_TIMEDELTA": "1",
                **self.env,
            }
        )
        if self.slack is not None:
            env.update(
                {
                    "SLACK_BOT_TOKEN": self.slack.token,
                    "SLACK_SIGNING_SECRET": SIGNING_SECRET,
                    "CHORUS_SLACK__API_URL": self.slack.api_url,
                }
            )
        return env

    async def replica(self, name: str, *, ready_within: float = 60.0, **extra: str) -> Process:
        port = free_port()
        home = self.home(name)
        log = self.root / f"{name}.log"
        env = {**self.environment(home, port), **extra}
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [str(CHORUS), "gateway", "--replica-id", name],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=out,
            )
        process = Process(name, proc, log, port)
        self.processes.append(process)
        await self.wait_ready(process, ready_within)
        return process

    def worker(self, name: str, **extra: str) -> Process:
        home = self.home(name)
        log = self.root / f"{name}.log"
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [str(CHORUS), "worker"],
                env={**self.environment(home, free_port()), **extra},
                stdout=subprocess.DEVNULL,
                stderr=out,
            )
        process = Process(name, proc, log)
        self.processes.append(process)
        return process

    async def wait_ready(self, process: Process, timeout: float = 60.0) -> None:
        async def ready() -> bool:
            if process.proc.poll() is not None:
                raise AssertionError(f"{process.name} exited: {self.tail(process)}")
            try:
                return await asyncio.to_thread(_status, f"{process.url}/readyz") == 200
            except OSError:
                return False

        try:
            await until(ready, timeout, f"{process.name} to become ready", poll=0.05)
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {self.tail(process)}") from None

    def balance(self, *replicas: Process) -> None:
        """Telegram's updates go to these replicas in turn (the load balancer)."""
        self.telegram.webhook_targets = [f"{r.url}/telegram/webhook" for r in replicas]

    def tail(self, process: Process, lines: int = 40) -> str:
        text = process.log.read_text(errors="replace") if process.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def close(self) -> None:
        for process in self.processes:
            if process.proc.poll() is None:
                process.proc.kill()
            process.proc.wait()
        for process in self.processes:  # shown by pytest when the test failed
            print(f"--- {process.name}", self.tail(process, 80), sep="\n")

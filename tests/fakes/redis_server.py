"""A real ``redis-server`` on a free 127.0.0.1 port, for tests that need Redis.

Nothing is persisted (``--save "" --appendonly no``). ``stop()`` kills the server
and ``start()`` brings a fresh, empty one back on the *same* port, so a test can
simulate an outage while clients keep their URL.

    with RedisServer(tmp_path) as server:
        client = redis.Redis.from_url(server.url)
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

__all__ = ["RedisServer", "redis_server_binary"]

START_TIMEOUT = 10.0
"""Seconds to wait for a started server to answer PING."""


def scripts_run(url: str) -> int:
    """Lua scripts the Redis server at ``url`` ran so far (``INFO commandstats``:
    ``evalsha`` and ``eval`` calls)."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        stats = client.info("commandstats")
    finally:
        client.close()
    return sum(int(stats.get(f"cmdstat_{n}", {}).get("calls", 0)) for n in ("evalsha", "eval"))


def redis_server_binary() -> str | None:
    """Path of the ``redis-server`` executable, or None when it is not installed."""
    return shutil.which("redis-server") or (
        "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pid_on(port: int) -> int | None:
    """The process id of the redis-server answering on ``port``; None when none answers."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"INFO server\r\n")
            data = b""
            while (found := re.search(rb"process_id:(\d+)\r\n", data)) is None:
                chunk = sock.recv(4096)
                if not chunk:
                    return None
                data += chunk
            return int(found.group(1))
    except OSError:
        return None


class RedisServer:
    """One ``redis-server`` process; the port stays the same across restarts."""

    def __init__(self, tmp_dir: Path, *, port: int | None = None) -> None:
        binary = redis_server_binary()
        if binary is None:
            raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
        self._binary = binary
        self._dir = Path(tmp_dir)
        self._dir.mkdir(parents=True, exist_ok=True)
        self._fixed_port = port is not None
        self.port = port or _free_port()
        self._proc: subprocess.Popen[bytes] | None = None
        self._log = self._dir / f"redis-{self.port}.log"
        self._started = False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> RedisServer:
        """Start the server (again) and wait until it answers on its port.

        The answer must come from this very process: another test process may
        have taken the free port in between (then a first start moves to another
        free port; a restart, which must keep its port, retries until its deadline).
        """
        if self.running:
            return self
        deadline = time.monotonic() + START_TIMEOUT
        while True:  # the port may still be in TIME_WAIT right after a stop()
            command = [
                self._binary,
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "no",
                "--dir", str(self._dir),
                "--logfile", str(self._log),
            ]  # fmt: skip
            self._proc = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            while self._proc.poll() is None and time.monotonic() < deadline:
                if _pid_on(self.port) == self._proc.pid:
                    self._started = True
                    return self
                time.sleep(0.02)
            if self._proc.poll() is None or time.monotonic() >= deadline:
                self.stop()
                raise RuntimeError(f"redis-server did not answer on port {self.port}")
            if not self._fixed_port and not self._started:
                self.port = _free_port()
            time.sleep(0.1)

    def stop(self) -> None:
        """Kill the server and wait for it; stopping a stopped server is harmless."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

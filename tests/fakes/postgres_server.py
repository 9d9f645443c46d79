"""A real PostgreSQL server: a throwaway cluster made with ``initdb``, run with ``pg_ctl``.

The cluster lives in a temp directory, listens on a free 127.0.0.1 port and
trusts local connections (it is reachable from this machine only, for the
length of a test session). PostgreSQL refuses to run as root, so as root the
cluster is made and run as an unprivileged uid (``nobody``, via ``setpriv``).

    with PostgresServer(tmp_path) as server:
        url = server.create_database("one_test")   # postgresql://chorus@127.0.0.1:port/one_test

Tests that need it fail, never skip, when PostgreSQL is missing: CI installs
Debian's ``postgresql`` package.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path
from types import TracebackType

__all__ = ["PostgresServer", "postgres_bin_dir"]

START_TIMEOUT = 30.0
PORT_TRIES = 3
"""Free ports a first start tries (another process may take the one picked)."""
UNPRIVILEGED = 65534
"""The uid and gid (``nobody``/``nogroup``) the cluster runs as when the tests run as root."""


def postgres_bin_dir() -> Path | None:
    """The directory of ``initdb`` and ``pg_ctl``, or None when PostgreSQL is not installed."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(versions[-1]).parent if versions else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresServer:
    """One PostgreSQL cluster; ``stop()`` then ``start()`` keeps its data and port."""

    USER = "chorus"

    def __init__(self, tmp_dir: Path, *, port: int | None = None) -> None:
        bin_dir = postgres_bin_dir()
        if bin_dir is None:
            raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
        self._bin = bin_dir
        self._dir = Path(tmp_dir)
        self._data = self._dir / "pgdata"
        self._log = self._dir / "postgres.log"
        self._fixed_port = port is not None
        self.port = port or _free_port()
        self._as_root = os.geteuid() == 0
        self._made = False
        self._started = False

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.USER}@127.0.0.1:{self.port}/{database}"

    def _run(self, *command: str) -> subprocess.CompletedProcess[str]:
        argv = list(command)
        if self._as_root:
            argv = [
                "setpriv", f"--reuid={UNPRIVILEGED}", f"--regid={UNPRIVILEGED}",
                "--clear-groups", *argv,
            ]  # fmt: skip
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=120, env={**os.environ, "LC_ALL": "C"}
        )

    def _init(self) -> None:
        self._dir.mkdir(parents=True, exist_ok=True)
        if self._as_root:
            self._dir.chmod(0o777)
            for one in (self._dir, *self._dir.parents):
                if one == Path("/"):
                    break
                one.chmod(one.stat().st_mode | 0o001)  # nobody may pass through
        done = self._run(
            str(self._bin / "initdb"),
            "-D", str(self._data),
            "-U", self.USER,
            "--auth=trust",
            "--encoding=UTF8",
            "--no-sync",
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed: {done.stderr.strip() or done.stdout.strip()}")
        self._made = True

    def start(self) -> PostgresServer:
        """Start the cluster (again). A first start whose free port another process took
        in the meantime moves to another free port; a restart keeps its port."""
        if not self._made:
            self._init()
        tries = 1 if self._fixed_port or self._started else PORT_TRIES
        for attempt in range(1, tries + 1):
            options = (
                f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=''"
                " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
                " -c max_connections=200"
            )
            done = self._run(
                str(self._bin / "pg_ctl"), "-D", str(self._data), "-l", str(self._log),
                "-o", options, "-w", "-t", str(int(START_TIMEOUT)), "start",
            )  # fmt: skip
            if done.returncode == 0:
                break
            if attempt == tries:
                log = self._log.read_text(errors="replace")[-2000:] if self._log.exists() else ""
                raise RuntimeError(f"pg_ctl start failed: {done.stderr.strip()}\n{log}")
            self.port = _free_port()
        self._started = True
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            done = subprocess.run(
                [str(self._bin / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)],
                capture_output=True,
            )
            if done.returncode == 0:
                return
            time.sleep(0.1)
        raise RuntimeError(f"PostgreSQL on port {self.port} did not become ready")

    def stop(self, mode: str = "fast") -> None:
        if not self._made:
            return
        self._run(str(self._bin / "pg_ctl"), "-D", str(self._data), "-m", mode, "-w", "stop")

    def create_database(self, name: str | None = None) -> str:
        """A new empty database; its URL."""
        import psycopg

        name = name or f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop("immediate")

"""The real gateway with tool servers from ``tests.fakes.mcp_server`` (real processes)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.runner.conftest import make_gateway  # noqa: F401  (the fixture)

FAKE_SERVER = [sys.executable, "-m", "tests.fakes.mcp_server"]


def stdio_server(state: Path, **extra: Any) -> dict[str, Any]:
    """The config of a stdio server that keeps its records in ``state``."""
    return {"command": FAKE_SERVER[0], "args": [*FAKE_SERVER[1:], str(state)], **extra}


EVERYONE = [{"tools": ["*__*"], "action": "allow"}]
"""A policy letting every person use every server's tool (these tests are about servers)."""


def write_config(
    home: Path, servers: dict[str, dict[str, Any]], policy: list[dict[str, Any]] | None = None
) -> None:
    home.mkdir(mode=0o700, exist_ok=True)
    path = home / "config.yaml"
    tools = {"mcp_servers": servers, "policy": EVERYONE if policy is None else policy}
    path.write_text(yaml.safe_dump({"tools": tools}), encoding="utf-8")
    path.chmod(0o600)


def calls(state: Path) -> list[dict[str, Any]]:
    path = state / "calls.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def pids(state: Path) -> list[int]:
    path = state / "pid"
    if not path.exists():
        return []
    return [int(line) for line in path.read_text(encoding="utf-8").split()]


def alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not exited (a zombie has)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        return False
    state = next((line for line in status.splitlines() if line.startswith("State:")), "")
    return "Z" not in state.split(":", 1)[-1][:3]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve_http(state: Path, port: int) -> subprocess.Popen[bytes]:
    """A Streamable HTTP server process on ``port``, once it accepts connections."""
    process = subprocess.Popen(
        [*FAKE_SERVER, str(state), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ},
    )
    for _ in range(2000):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                return process
        except OSError:
            if process.poll() is not None:
                raise RuntimeError("the MCP HTTP server exited") from None
            time.sleep(0.01)
    process.kill()
    raise RuntimeError("the MCP HTTP server did not listen")


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A Streamable HTTP server process on a local port: (its url, its state dir)."""
    state = tmp_path / "http-state"
    port = free_port()
    process = serve_http(state, port)
    try:
        yield f"http://127.0.0.1:{port}/mcp", state
    finally:
        process.kill()
        process.wait(10)

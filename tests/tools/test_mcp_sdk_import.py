"""A gateway with no MCP server configured never imports the ``mcp`` SDK (a second or
so of every start); one with a server does."""

from __future__ import annotations

import subprocess
import sys
import textwrap

PROBE = """
import sys

from agent.tools.mcp import McpServerSettings, McpTools

tools = McpTools({{"off": McpServerSettings(command="true", enabled=False)}})
print("before", "mcp" in sys.modules, tools.health())
tools = McpTools({servers})
print("after", "mcp" in sys.modules, len(tools.health()))
"""


def probe(servers: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PROBE.format(servers=servers))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_no_enabled_server_no_sdk() -> None:
    assert probe("{}").splitlines() == ["before False []", "after False 0"]


def test_a_server_loads_the_sdk() -> None:
    servers = '{"files": McpServerSettings(command="mcp-files")}'
    assert probe(servers).splitlines() == ["before False []", "after True 1"]


def test_the_gateway_and_the_worker_load_without_the_sdk() -> None:
    code = (
        "import sys\n"
        "from gateway.app import open_stack, run_gateway, run_worker\n"
        "print('mcp' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"

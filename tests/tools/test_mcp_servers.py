"""MCP servers as the gateway's children: a crash costs only the call in flight, the server
is started again; a server that cannot start costs only its own tools; shutdown leaves
no child; operators see each server's health in /admin status and the metrics."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from agent.tools.mcp import McpServerSettings, McpTools
from tests.fakes import FakeOpenAI
from tests.runner.conftest import GatewayFactory
from tests.tools.conftest import alive, calls, free_port, pids, serve_http, stdio_server
from tests.tools.test_mcp_calls import gateway_with, offered, tool_results
from tests.waiting import until


async def test_a_server_killed_during_a_call_leaves_the_turn_answered_and_is_restarted(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path, tmp_path: Path
) -> None:
    state = tmp_path / "s"
    gw = await gateway_with(make_gateway, chorus_home, {"demo": stdio_server(state)})
    [first_pid] = pids(state)
    server.tool_call("demo__block", {})
    server.reply("The tool server stopped.")
    await gw.say("block")
    await until(lambda: [c["tool"] for c in calls(state)] == ["block"], what="the call")
    os.kill(first_pid, signal.SIGKILL)
    reply = await gw.adapter.pop(20)
    assert reply.text == "The tool server stopped."
    [result] = tool_results(server.last_request)
    assert json.loads(result) == {
        "success": False,
        "error": "the tool server demo stopped during the call; it is being restarted",
    }
    mcp = gw.stack.mcp
    assert mcp is not None
    await until(lambda: len(pids(state)) == 2 and mcp.health()[0].up, what="a new process")
    assert not alive(first_pid)
    [health] = mcp.health()
    assert health.restarts == 1
    server.tool_call("demo__echo", {"text": "back"})
    server.reply("ok")
    await gw.ask("again")
    assert "echo: back" in tool_results(server.last_request)[-1]


async def test_a_server_that_cannot_start_costs_only_its_own_tools(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path, tmp_path: Path
) -> None:
    state = tmp_path / "s"
    servers: dict[str, dict[str, Any]] = {
        "broken": {"command": str(tmp_path / "no-such-program")},
        "demo": stdio_server(state),
    }
    gw = await gateway_with(make_gateway, chorus_home, servers)
    server.tool_call("broken__anything", {})
    server.tool_call("demo__echo", {"text": "fine"})
    server.reply("one of two")
    reply = await gw.ask("use both")
    assert reply.text == "one of two"
    names = offered(server.requests[-3])
    assert "demo__echo" in names
    assert not [n for n in names if n.startswith("broken__")]
    unknown, echoed = tool_results(server.last_request)
    assert json.loads(unknown)["success"] is False
    assert "unknown tool 'broken__anything'" in json.loads(unknown)["error"]
    assert "echo: fine" in echoed

    for command in ("/status", "/admin status", "/admin stats"):  # an admin's status
        status = await gw.ask(command, user="1")
        assert "Tool server demo: up, 5 tools." in status.text
        assert "Tool server broken: DOWN" in status.text
        assert "last error: FileNotFoundError" in status.text
    status = await gw.ask("/status", user="2")
    assert "Tool server" not in status.text  # operational: admins only
    status = await gw.ask("/admin status", user="2")
    assert "Tool server" not in status.text
    scrape = gw.stack.metrics.render()[0].decode()
    assert 'chorus_tool_server_up{server="demo"} 1.0' in scrape
    assert 'chorus_tool_server_up{server="broken"} 0.0' in scrape
    assert 'chorus_tool_calls_total{outcome="ok",server="demo"} 1.0' in scrape
    assert 'chorus_tool_calls_total{outcome="timeout",server="broken"} 0.0' in scrape


async def test_shutdown_leaves_no_child(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path, tmp_path: Path
) -> None:
    state = tmp_path / "s"
    gw = await gateway_with(make_gateway, chorus_home, {"demo": stdio_server(state)})
    [pid] = pids(state)
    assert alive(pid)
    await gw.runner.shutdown(5)
    await gw.stack.close()
    assert not alive(pid)


async def test_a_disabled_server_is_not_started(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path, tmp_path: Path
) -> None:
    state = tmp_path / "s"
    gw = await gateway_with(make_gateway, chorus_home, {"demo": stdio_server(state, enabled=False)})
    await asyncio.sleep(0.2)
    assert pids(state) == []
    assert gw.stack.mcp is not None and gw.stack.mcp.health() == []


async def test_a_server_that_hangs_at_start_is_stopped_with_its_process(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = (
        "import os, pathlib, time; "
        f"pathlib.Path({str(pid_file)!r}).write_text(str(os.getpid())); time.sleep(1000)"
    )
    conf = McpServerSettings(command=sys.executable, args=["-c", script])
    tools = McpTools({"slow": conf})
    tools.start()
    await until(lambda: pid_file.exists() and pid_file.read_text(), what="the process")
    pid = int(pid_file.read_text())
    [health] = tools.health()
    assert not health.up and tools.schemas() == []
    await tools.stop()
    assert not alive(pid)


async def test_an_http_server_that_goes_away_costs_the_call_and_is_reconnected(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path, tmp_path: Path
) -> None:
    state, port = tmp_path / "http", free_port()
    process = serve_http(state, port)
    try:
        remote = {"url": f"http://127.0.0.1:{port}/mcp"}
        gw = await gateway_with(make_gateway, chorus_home, {"remote": remote})
        process.kill()
        process.wait(10)
        server.tool_call("remote__echo", {"text": "anyone?"})
        server.reply("The server is away.")
        reply = await gw.ask("call it")
        assert reply.text == "The server is away."
        [result] = tool_results(server.last_request)
        assert json.loads(result)["success"] is False
        assert "the tool server remote" in json.loads(result)["error"]
        process = serve_http(state, port)
        mcp = gw.stack.mcp
        assert mcp is not None
        await until(lambda: mcp.health()[0].up, what="connected again")
        server.tool_call("remote__echo", {"text": "back"})
        server.reply("ok")
        await gw.ask("again")
        assert "echo: back" in tool_results(server.last_request)[-1]
    finally:
        process.kill()
        process.wait(10)

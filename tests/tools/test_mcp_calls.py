"""The agent's tools from MCP servers, in the real gateway: the fake LLM scripts the calls,
a real MCP server (``tests.fakes.mcp_server``, a child process) answers them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agent.others import QUOTED_MARK
from tests.fakes import FakeOpenAI
from tests.runner.conftest import Gateway, GatewayFactory
from tests.tools.conftest import calls, stdio_server, write_config
from tests.waiting import until

VALID_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def offered(request: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools", [])]


def tool_results(request: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in request["messages"] if m["role"] == "tool"]


async def gateway_with(
    make_gateway: GatewayFactory,
    home: Path,
    servers: dict[str, dict[str, Any]],
    policy: list[dict[str, Any]] | None = None,
) -> Gateway:
    write_config(home, servers, policy)
    gw = await make_gateway()
    mcp = gw.stack.mcp
    assert mcp is not None
    await until(lambda: all(h.up or h.last_error for h in mcp.health()), what="servers tried")
    return gw


async def test_a_call_reaches_the_server_and_its_result_the_next_request(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path, tmp_path: Path
) -> None:
    state = tmp_path / "demo"
    gw = await gateway_with(make_gateway, chorus_home, {"demo": stdio_server(state)})
    server.tool_call("demo__echo", {"text": "hello there"})
    server.reply("It said hello.")
    reply = await gw.ask("try the echo tool")
    assert reply.text == "It said hello."
    assert calls(state) == [
        {"tool": "echo", "arguments": {"text": "hello there"}, "authorization": None}
    ]
    first, second = server.requests[-2:]
    names = offered(first)
    assert {"demo__echo", "demo__big", "demo__block", "demo__grow"} <= set(names)
    assert "demo__weird_name" in names  # "weird.name" made a valid function name
    assert all(VALID_NAME.match(name) for name in names)
    [result] = tool_results(second)
    assert "echo: hello there" in result
    assert QUOTED_MARK in result  # fenced as others' content


async def test_two_servers_are_namespaced_and_each_call_goes_to_its_own(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path, tmp_path: Path
) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    gw = await gateway_with(
        make_gateway, chorus_home, {"one": stdio_server(one), "two": stdio_server(two)}
    )
    server.tool_call("two__echo", {"text": "for two"})
    server.reply("done")
    await gw.ask("use the second server")
    assert {"one__echo", "two__echo"} <= set(offered(server.requests[-2]))
    assert calls(one) == []
    assert [c["arguments"] for c in calls(two)] == [{"text": "for two"}]


async def test_the_list_follows_list_changed(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path, tmp_path: Path
) -> None:
    gw = await gateway_with(make_gateway, chorus_home, {"demo": stdio_server(tmp_path / "s")})
    assert "demo__late" not in offered_now(gw)
    server.tool_call("demo__grow", {})
    server.reply("grown")
    await gw.ask("grow")
    await until(lambda: "demo__late" in offered_now(gw), what="the new tool listed")
    server.tool_call("demo__late", {})
    server.reply("used it")
    await gw.ask("use the new one")
    assert "demo__late" in offered(server.requests[-2])
    assert "late result" in tool_results(server.requests[-1])[-1]


def offered_now(gw: Gateway) -> list[str]:
    return [s["function"]["name"] for s in gw.stack.factory.tools.schemas()]


async def test_a_big_result_is_cut_and_the_model_told(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path, tmp_path: Path
) -> None:
    demo = stdio_server(tmp_path / "s", max_result_chars=1000)
    gw = await gateway_with(make_gateway, chorus_home, {"demo": demo})
    server.tool_call("demo__big", {"chars": 5000})
    server.reply("long")
    await gw.ask("a long one")
    [result] = tool_results(server.last_request)
    assert "x" * 1000 in result
    assert "x" * 1001 not in result
    assert "result cut: the first 1000 of 5000 characters" in result


async def test_a_call_that_hangs_hits_the_timeout_and_the_turn_is_answered(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path, tmp_path: Path
) -> None:
    state = tmp_path / "s"
    gw = await gateway_with(make_gateway, chorus_home, {"demo": stdio_server(state, timeout=1)})
    server.tool_call("demo__block", {})
    server.reply("The tool did not answer.")
    reply = await gw.ask("block")
    assert reply.text == "The tool did not answer."
    [result] = tool_results(server.last_request)
    assert json.loads(result) == {
        "success": False,
        "error": "the tool server demo did not answer within 1 s",
    }
    server.tool_call("demo__echo", {"text": "still there"})  # the server itself is fine
    server.reply("ok")
    await gw.ask("echo")
    assert "echo: still there" in tool_results(server.last_request)[-1]


async def test_a_server_over_streamable_http_gets_its_headers(
    make_gateway: GatewayFactory,
    server: FakeOpenAI,
    chorus_home: Path,
    http_server: tuple[str, Path],
) -> None:
    url, state = http_server
    remote = {"url": url, "headers": {"Authorization": "Bearer remote-token-123"}}
    gw = await gateway_with(make_gateway, chorus_home, {"remote": remote})
    server.tool_call("remote__echo", {"text": "over http"})
    server.reply("done")
    await gw.ask("call the remote one")
    assert calls(state) == [
        {
            "tool": "echo",
            "arguments": {"text": "over http"},
            "authorization": "Bearer remote-token-123",
        }
    ]
    assert "echo: over http" in tool_results(server.last_request)[-1]

"""A server whose ``headers``/``env`` name ``{person.secret.NAME}``: each person's calls carry
their own credential (the real test server records which one each call got), a person
without it is told how to set it and the server gets no call, and a stdio server's
process of a person is stopped when idle and at shutdown."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import yaml

from agent.tools.mcp import McpServerSettings, McpTools
from gateway.logs import MASK, redact
from memory.secrets import SecretKey, SecretStore
from tests.fakes import FakeOpenAI
from tests.runner.conftest import Gateway, GatewayFactory
from tests.tools.conftest import alive, calls, pids, stdio_server, write_config
from tests.tools.test_mcp_calls import tool_results
from tests.waiting import until

KEY = "percred-test-key-0123456789-abcdefghij"
ANN, BOB, CY = "2", "3", "4"
"""Three people of the test chat: Ann and Bob have set their token, Cy has not."""
IDLE = 60


async def open_gateway(
    make_gateway: GatewayFactory, home: Path, servers: dict[str, dict[str, Any]], secret: str
) -> Gateway:
    write_config(home, servers)
    path = home / "config.yaml"
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    config["tools"]["idle_seconds"] = IDLE
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    gw = await make_gateway(CHORUS_SECRET_KEY=KEY)
    mcp, store = gw.stack.mcp, gw.stack.secrets
    assert mcp is not None and store is not None
    await until(lambda: all(h.up or h.last_error for h in mcp.health()), what="servers tried")
    store.set(f"testchat:{ANN}", secret, "ann-token-0001", gw.clock.time())
    store.set(f"testchat:{BOB}", secret, "bob-token-0002", gw.clock.time())
    return gw


async def call_as(gw: Gateway, server: FakeOpenAI, user: str, tool: str, text: str) -> str:
    """The result the model got for one call of ``tool`` in ``user``'s turn."""
    server.tool_call(tool, {"text": text})
    server.reply("done")
    reply = await gw.ask(f"call it for {text}", user=user)
    assert reply.text == "done"
    return tool_results(server.last_request)[-1]


def how_to_set(result: str, name: str) -> None:
    error = json.loads(result)
    assert error["success"] is False
    assert f"send /secret set {name} in a direct message with the bot" in error["error"]


def nothing_leaked(server: FakeOpenAI) -> None:
    """The tokens never reached the model, and a log line would show them masked."""
    sent = json.dumps(server.requests)
    assert "ann-token-0001" not in sent and "bob-token-0002" not in sent
    assert redact("token ann-token-0001 and bob-token-0002") == f"token {MASK} and {MASK}"


async def test_over_http_each_person_calls_with_their_own_token(
    make_gateway: GatewayFactory,
    server: FakeOpenAI,
    chorus_home: Path,
    http_server: tuple[str, Path],
) -> None:
    url, state = http_server
    remote = {"url": url, "headers": {"Authorization": "Bearer {person.secret.REMOTE_TOKEN}"}}
    gw = await open_gateway(make_gateway, chorus_home, {"remote": remote}, "REMOTE_TOKEN")
    assert "echo: from ann" in await call_as(gw, server, ANN, "remote__echo", "from ann")
    assert "echo: from bob" in await call_as(gw, server, BOB, "remote__echo", "from bob")
    assert "echo: ann again" in await call_as(gw, server, ANN, "remote__echo", "ann again")
    how_to_set(await call_as(gw, server, CY, "remote__echo", "from cy"), "REMOTE_TOKEN")
    assert [(c["arguments"]["text"], c["authorization"]) for c in calls(state)] == [
        ("from ann", "Bearer ann-token-0001"),
        ("from bob", "Bearer bob-token-0002"),
        ("ann again", "Bearer ann-token-0001"),
    ]
    nothing_leaked(server)


async def test_over_stdio_each_person_has_a_process_of_their_own(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path, tmp_path: Path
) -> None:
    state = tmp_path / "s"
    personal = stdio_server(state, env={"CHORUS_TEST_TOKEN": "{person.secret.TEST_TOKEN}"})
    gw = await open_gateway(make_gateway, chorus_home, {"demo": personal}, "TEST_TOKEN")
    [lister] = pids(state)  # started with no one's token, to list the tools
    assert "echo: from ann" in await call_as(gw, server, ANN, "demo__echo", "from ann")
    assert "echo: from bob" in await call_as(gw, server, BOB, "demo__echo", "from bob")
    how_to_set(await call_as(gw, server, CY, "demo__echo", "from cy"), "TEST_TOKEN")
    ann, bob = calls(state)
    assert (ann["env_token"], bob["env_token"]) == ("ann-token-0001", "bob-token-0002")
    assert len({lister, ann["pid"], bob["pid"]}) == 3
    assert pids(state) == [lister, ann["pid"], bob["pid"]]  # none started for Cy
    nothing_leaked(server)

    assert "echo: ann again" in await call_as(gw, server, ANN, "demo__echo", "ann again")
    assert calls(state)[-1]["pid"] == ann["pid"]  # her process, still up, took it
    await gw.clock.advance(IDLE - 1)
    assert alive(ann["pid"]) and alive(bob["pid"])
    await gw.clock.advance(2)
    await until(lambda: not alive(ann["pid"]) and not alive(bob["pid"]), what="idle stopped")
    assert alive(lister)

    assert "echo: ann back" in await call_as(gw, server, ANN, "demo__echo", "ann back")
    again = calls(state)[-1]
    assert again["env_token"] == "ann-token-0001" and again["pid"] not in (ann["pid"], lister)
    await gw.runner.shutdown(5)
    await gw.stack.close()
    assert not [pid for pid in pids(state) if alive(pid)]  # none left behind


async def test_a_changed_secret_is_used_from_the_next_call(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path, tmp_path: Path
) -> None:
    state = tmp_path / "s"
    personal = stdio_server(state, env={"CHORUS_TEST_TOKEN": "{person.secret.TEST_TOKEN}"})
    gw = await open_gateway(make_gateway, chorus_home, {"demo": personal}, "TEST_TOKEN")
    await call_as(gw, server, ANN, "demo__echo", "old")
    store = gw.stack.secrets
    assert store is not None
    store.set(f"testchat:{ANN}", "TEST_TOKEN", "ann-token-new-3", gw.clock.time())
    await call_as(gw, server, ANN, "demo__echo", "new")
    old, new = calls(state)
    assert (old["env_token"], new["env_token"]) == ("ann-token-0001", "ann-token-new-3")
    await until(lambda: not alive(old["pid"]), what="the old process stopped")


async def test_a_secret_that_cannot_be_opened_is_a_clear_tool_error(tmp_path: Path) -> None:
    state, where = tmp_path / "s", tmp_path / "state.db"
    with SecretStore(where, SecretKey("another-key-0123456789-abcdefghijklm")) as other:
        other.set("testchat:2", "TEST_TOKEN", "sealed-elsewhere-1", 0.0)
    conf = McpServerSettings.model_validate(
        stdio_server(state, env={"CHORUS_TEST_TOKEN": "{person.secret.TEST_TOKEN}"})
    )
    for key, said in (
        (SecretKey(KEY), "stored under another key and cannot be used: send /secret set"),
        (None, "the operator has not set CHORUS_SECRET_KEY"),
    ):
        with SecretStore(where, key) as store:
            tools = McpTools({"demo": conf}, secrets=store.get)
            tools.start()
            try:
                await until(functools.partial(tools.has, "demo__echo"), what="the tools listed")
                result = await tools.call("demo__echo", {"text": "hi"}, "testchat:2")
            finally:
                await tools.stop()
        error = json.loads(result)
        assert error["success"] is False and said in error["error"]
    assert calls(state) == []  # the server got no call
    assert len(pids(state)) == 2  # only the two listing starts

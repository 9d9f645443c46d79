"""README's "Tools" example runs as written: its server file and its configuration (with
the server's path where the file was saved, and this Python for ``python3``)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

from gateway.config import load_settings
from tests.fakes import FakeOpenAI
from tests.runner.conftest import GatewayFactory
from tests.tools.test_mcp_calls import gateway_with, tool_results

README = Path(__file__).resolve().parents[2] / "README.md"
SERVER_PATH = "/srv/chorus/clock.py"


def tools_section() -> str:
    text = README.read_text(encoding="utf-8")
    return text.split("\n## Tools\n", 1)[1].split("\n## ", 1)[0]


async def test_the_readme_example_runs(
    make_gateway: GatewayFactory, server: FakeOpenAI, chorus_home: Path, tmp_path: Path
) -> None:
    section = tools_section()
    [code] = re.findall(r"```python\n(.*?)```", section, re.S)
    config = re.findall(r"```yaml\n(.*?)```", section, re.S)[0]
    clock = tmp_path / "clock.py"
    clock.write_text(code, encoding="utf-8")
    tools = yaml.safe_load(config.replace(SERVER_PATH, str(clock)))["tools"]
    servers = tools["mcp_servers"]
    assert servers["clock"]["command"] == "python3"
    servers["clock"]["command"] = sys.executable
    gw = await gateway_with(make_gateway, chorus_home, servers, tools["policy"])
    server.tool_call("clock__now", {})
    server.reply("It is now.")
    await gw.ask("what time is it?")
    [result] = tool_results(server.last_request)
    assert re.search(r"> \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", result), result
    assert gw.stack.mcp is not None
    assert [h.name for h in gw.stack.mcp.health()] == ["clock"]  # search: enabled: false


def test_the_per_person_example_is_a_valid_configuration(tmp_path: Path) -> None:
    section = tools_section().split("#### A server that acts with each person's credential")[1]
    config = re.findall(r"```yaml\n(.*?)```", section, re.S)[0]
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.yaml").write_text(config, encoding="utf-8")
    (home / "config.yaml").chmod(0o600)
    tools = load_settings(home, {}).tools
    assert tools.idle_seconds == 300
    github, notes = tools.mcp_servers["github"], tools.mcp_servers["notes"]
    assert github.per_person and github.secrets_needed() == ["GITHUB_TOKEN"]
    assert notes.per_person and notes.secrets_needed() == ["NOTES_TOKEN"]

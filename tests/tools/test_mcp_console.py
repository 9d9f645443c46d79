"""``chorus console`` as a real process with a stdio tool server: the call reaches the
server, its result the model, and the server process is gone when the console is."""

from __future__ import annotations

from pathlib import Path

from tests.fakes import FakeOpenAI
from tests.gateway.test_console import chat
from tests.tools.conftest import alive, calls, pids, stdio_server, write_config


def test_the_console_offers_the_tools_and_leaves_no_child(
    chorus_home: Path, server: FakeOpenAI, tmp_path: Path
) -> None:
    state = tmp_path / "s"
    write_config(chorus_home, {"demo": stdio_server(state)})
    server.tool_call("demo__echo", {"text": "from the console"})
    server.reply("The server said it back.")
    done = chat(chorus_home, server, "echo something\n/quit\n")
    assert done.returncode == 0, done.stderr
    assert "The server said it back." in done.stdout
    assert [c["arguments"] for c in calls(state)] == [{"text": "from the console"}]
    answered = next(r for r in server.requests if any(m["role"] == "tool" for m in r["messages"]))
    [result] = [m["content"] for m in answered["messages"] if m["role"] == "tool"]
    assert "echo: from the console" in result
    [pid] = pids(state)
    assert not alive(pid)

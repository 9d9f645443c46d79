"""Starting the ``chorus`` CLI and reading the settings load none of the heavy SDKs.

Every ``chorus`` command, and every gateway or worker process, starts by importing
``gateway.cli`` and loading its settings; the LLM client, the MCP SDK, the platform
SDKs, redis and the tracing exporters are imported only by the code that uses them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

HEAVY = (
    "openai",
    "mcp",
    "discord",
    "telegram",
    "slack_bolt",
    "slack_sdk",
    "opentelemetry",
    "numpy",
    "redis",
    "aiohttp",
    "httpx",
)
"""Top-level packages neither importing the CLI nor reading the settings may load."""

REPORT = """
import json
import sys

print(json.dumps(sorted({name.split(".")[0] for name in sys.modules} & set(HEAVY))))
"""


def loaded_after(code: str, tmp_path: Path) -> list[str]:
    """The heavy packages a fresh interpreter has imported after running ``code``."""
    script = textwrap.dedent(code) + f"\nHEAVY = {HEAVY!r}\n" + REPORT
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "OPENAI_"))}
    env["CHORUS_HOME"] = str(tmp_path / "home")
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    loaded: list[str] = json.loads(result.stdout.strip().splitlines()[-1])
    return loaded


def test_importing_the_cli_loads_no_heavy_sdk(tmp_path: Path) -> None:
    assert loaded_after("import gateway.cli", tmp_path) == []


def test_reading_the_settings_loads_no_heavy_sdk(tmp_path: Path) -> None:
    code = """
    import os
    from pathlib import Path

    from gateway.config import LiveSettings, load_settings

    environ = {
        "TELEGRAM_BOT_TOKEN": "123:token",
        "CHORUS_MEMORY__PROVIDER": "supermemory",
        "CHORUS_TOOLS__MCP_SERVERS__FILES__COMMAND": "mcp-files",
    }
    settings = load_settings(Path(os.environ["CHORUS_HOME"]), environ)
    assert settings.tools.mcp_servers["files"].command == "mcp-files"
    LiveSettings(settings)
    """
    assert loaded_after(code, tmp_path) == []

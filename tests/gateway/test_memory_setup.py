"""``chorus memory setup`` and ``chorus memory status`` as an operator runs them."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

from memory.paths import ChorusPaths
from memory.providers import ProviderHealth

CHORUS = Path(sys.executable).with_name("chorus")

PROVIDER = textwrap.dedent(
    """
    from memory.providers import MemoryProvider


    class KeyedProvider(MemoryProvider):
        @property
        def name(self):
            return "keyed"

        def is_available(self):
            return True

        def initialize(self, session_id, **kwargs):
            pass

        def get_tool_schemas(self):
            return []

        def get_config_schema(self):
            return [
                {"key": "region", "description": "Where", "default": "eu",
                 "choices": ["eu", "us"]},
                {"key": "limit", "description": "How many", "default": 5},
                {"key": "api_key", "description": "The key", "secret": True,
                 "required": True, "env_var": "KEYED_API_KEY"},
            ]
    """
)


def run(home: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHORUS_", "KEYED_"))}
    env.update({"CHORUS_HOME": str(home), "COLUMNS": "200"})
    return subprocess.run(
        [str(CHORUS), *args], input=stdin, capture_output=True, text=True, env=env, timeout=60
    )


def keyed_home(chorus_home: Path) -> Path:
    plugin = chorus_home / "plugins" / "keyed"
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text(PROVIDER, encoding="utf-8")
    return chorus_home


def config(home: Path) -> dict[str, object]:
    loaded = yaml.safe_load((home / "config.yaml").read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def test_setup_asks_every_field_keeps_the_secret_out_of_config_yaml(chorus_home: Path) -> None:
    home = keyed_home(chorus_home)
    before = run(home, "memory", "setup", "keyed", "--no-input")
    assert before.returncode == 1 and "KEYED_API_KEY) is required" in before.stderr

    # a bad answer is asked again; Enter takes the default; the secret is typed hidden
    result = run(home, "memory", "setup", "keyed", stdin="moon\nus\n12\nsk-very-secret\n")
    assert result.returncode == 0, result.stderr
    assert "expected one of eu, us" in result.stdout
    assert "restart" in result.stdout and "available: yes" in result.stdout
    assert "sk-very-secret" not in result.stdout + result.stderr
    cfg = config(home)
    assert cfg["memory"] == {
        "providers": {"keyed": {"region": "us", "limit": 12}},
        "provider": "keyed",
    }
    assert "sk-very-secret" not in (home / "config.yaml").read_text()
    env_file = home / ".env"
    assert 'KEYED_API_KEY="sk-very-secret"' in env_file.read_text()
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600

    status = run(home, "memory", "status")
    assert status.returncode == 0, status.stdout
    assert "provider: keyed" in status.stdout and "settings: ok" in status.stdout
    assert "last error: none" in status.stdout


def test_setup_from_the_command_line_keeps_other_settings_and_the_key(chorus_home: Path) -> None:
    home = keyed_home(chorus_home)
    (home / "config.yaml").write_text("sessions:\n  idle_minutes: 30\n", encoding="utf-8")
    (home / ".env").write_text("OTHER=1\nKEYED_API_KEY=old\n", encoding="utf-8")
    (home / ".env").chmod(0o600)
    result = run(home, "memory", "setup", "keyed", "--set", "limit=3", "--no-input")
    assert result.returncode == 0, result.stderr
    cfg = config(home)
    assert cfg["sessions"] == {"idle_minutes": 30}
    assert cfg["memory"] == {
        "providers": {"keyed": {"region": "eu", "limit": 3}},
        "provider": "keyed",
    }
    assert (home / ".env").read_text() == "OTHER=1\nKEYED_API_KEY=old\n"  # kept, not rewritten

    wrong = run(home, "memory", "setup", "keyed", "--set", "colour=red", "--no-input")
    assert wrong.returncode == 1 and "keyed has no setting colour" in wrong.stderr


def test_status_refuses_a_secret_in_config_yaml_and_shows_the_last_error(chorus_home: Path) -> None:
    home = keyed_home(chorus_home)
    (home / "config.yaml").write_text(
        "memory:\n  provider: keyed\n  providers:\n    keyed:\n      api_key: sk-leaked\n",
        encoding="utf-8",
    )
    (home / "config.yaml").chmod(0o600)
    with ProviderHealth(ChorusPaths(home).state_db) as health:
        health.started("keyed", "background")
        health.failed("keyed", "sync_turn", "TimeoutError")
    status = run(home, "memory", "status")
    assert status.returncode == 1
    assert "api_key is a secret and does not belong in config.yaml" in status.stdout
    assert "KEYED_API_KEY" in status.stdout and "sk-leaked" not in status.stdout
    assert "last started:" in status.stdout and "(background, pid" in status.stdout
    assert "last error: sync_turn: TimeoutError" in status.stdout


def test_status_without_a_provider_and_setup_without_a_name(chorus_home: Path) -> None:
    home = keyed_home(chorus_home)
    status = run(home, "memory", "status")
    assert status.returncode == 0 and "built-in memory only" in status.stdout
    setup = run(home, "memory", "setup", "--no-input")
    assert setup.returncode == 1 and "installed: " in setup.stderr
    bundled = setup.stderr.split("installed: ", 1)[1].split(", ")
    assert "holographic" in bundled and "mem0" in bundled
    assert setup.stderr.rstrip().endswith("keyed)")  # bundled first, then the user's
    missing = run(home, "memory", "setup", "nope", "--no-input")
    assert missing.returncode == 1 and "'nope' not found" in missing.stderr


def test_the_active_providers_own_commands_show_under_chorus_memory(chorus_home: Path) -> None:
    from plugins.memory import load_memory_provider

    home = keyed_home(chorus_home)
    assert run(home, "memory", "holographic", "facts", "--user", "telegram:1").returncode == 2
    assert run(home, "memory", "setup", "holographic", "--no-input").returncode == 0
    provider = load_memory_provider("holographic", home)
    provider.initialize("s1", chorus_home=home, platform="telegram", user_key="telegram:1")
    added = provider.handle_tool_call(
        "fact_store", {"action": "add", "content": "The boat is called Nimbus"}
    )
    provider.handle_tool_call("fact_store", {"action": "add", "content": "Keys are under the mat"})
    provider.shutdown()
    assert '"success": true' in added

    listed = run(home, "memory", "holographic", "facts", "--user", "telegram:1")
    assert listed.returncode == 0, listed.stderr
    assert "Nimbus" in listed.stdout and "2 fact(s)" in listed.stdout
    other = run(home, "memory", "holographic", "facts", "--user", "telegram:2")
    assert "Nimbus" not in other.stdout and "has no facts" in other.stdout
    fact_id = next(line.split()[0] for line in listed.stdout.splitlines() if "Nimbus" in line)
    assert (
        run(home, "memory", "holographic", "forget", "--user", "telegram:1", fact_id).returncode
        == 0
    )
    after = run(home, "memory", "holographic", "facts", "--user", "telegram:1")
    assert "Nimbus" not in after.stdout and "mat" in after.stdout
    assert (
        run(home, "memory", "holographic", "forget", "--user", "telegram:1", "999").returncode == 1
    )
    assert (
        run(home, "memory", "holographic", "forget", "--user", "telegram:1", "--all").returncode
        == 0
    )
    assert (
        "has no facts" in run(home, "memory", "holographic", "facts", "--user", "telegram:1").stdout
    )
